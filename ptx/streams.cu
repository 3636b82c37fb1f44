// Kernels for the stream examples (cuda-driver-examples/examples/per_thread_stream.rs).

// spin_ns(long long ns): thread 0 of block 0 busy-waits until the GPU's global nanosecond
// timer (%globaltimer) has advanced by ns, then returns; every other thread returns at once.
// Launched with one thread, a kernel occupies a sliver of one SM for a known time, so kernels
// on streams that may run concurrently overlap almost completely, and kernels on one stream
// (or on streams that synchronise with each other) take the sum of their times.
extern "C" __global__ void spin_ns(long long ns)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    unsigned long long start;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while ((long long)(now - start) < ns);
}
