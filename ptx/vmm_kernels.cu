// Kernels of the virtual memory, IPC and memory pool tests and examples (cuda-driver's GPU
// tests vmm/, memory/ipc.rs, pool.rs, peer.rs, and the examples vector_add_mmap,
// mem_map_ipc_drv, simple_ipc and stream_ordered_allocation).

// out[i] = pattern(seed, i) for i < n: a position-dependent, seed-dependent word that a
// host can recompute (see `pattern` in the tests and examples), never equal for two seeds at
// the same position.
extern "C" __global__ void write_pattern(unsigned* out, unsigned seed, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = (unsigned)i * 2654435761u + seed;
        x ^= x >> 15;
        out[i] = x * 2246822519u + seed;
    }
}

// data[i] += v for i < n.
extern "C" __global__ void add_u32(unsigned* data, unsigned v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] += v;
    }
}

// c[i] = a[i] + b[i] for i < n (vectorAddMMAP's kernel).
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
