// Kernels for the GPU tests of the safe crate (cuda-driver/tests/gpu). Each one is small and
// checks one thing: a parameter kind, a memory space, a launch feature. Names are extern "C",
// so the PTX names are exactly the C names below.

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// fill_u32(unsigned* out, unsigned v, int n): out[i] = v for every i < n.
extern "C" __global__ void fill_u32(unsigned* out, unsigned v, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        out[i] = v;
}

// add_u32(unsigned* data, unsigned v, int n): data[i] += v for every i < n. Launched several
// times on one stream (or captured into a graph), the sum shows every launch ran, in order.
extern "C" __global__ void add_u32(unsigned* data, unsigned v, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        data[i] += v;
}

// saxpy(float a, const float* x, float* y, int n): y[i] = a * x[i] + y[i] for every i < n.
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// A structure passed by value. Device layout (size 32, alignment 16):
//
//     offset  0  int    a
//     offset  4  (4 bytes of padding)
//     offset  8  double b
//     offset 16  float4 c   (float4 is 16-byte aligned on the device)
//
// The matching Rust type is
//     #[repr(C, align(16))] struct Params { a: i32, b: f64, c: [f32; 4] }
// (the explicit align(16) is needed: [f32; 4] alone is 4-byte aligned, which would still put
// c at 16 here but give the struct alignment 8).
struct Params {
    int a;
    double b;
    float4 c;
};

// struct_param(Params p, float* out): out[0] = a, out[1] = b, out[2..6] = c.x, c.y, c.z, c.w
// (a and b converted to float). Launch with a single thread; out holds 6 floats.
extern "C" __global__ void struct_param(Params p, float* out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    out[0] = (float)p.a;
    out[1] = (float)p.b;
    out[2] = p.c.x;
    out[3] = p.c.y;
    out[4] = p.c.z;
    out[5] = p.c.w;
}

// use_dyn_shared(float* out, int n): reverses 0, 1, .., n-1 through dynamic shared memory:
// out[t] = n - 1 - t for every t < n. Launch one block of at least n threads with at least
// n * sizeof(float) bytes of dynamic shared memory (sharedMemBytes of the launch).
extern "C" __global__ void use_dyn_shared(float* out, int n)
{
    extern __shared__ float shared[];
    int t = threadIdx.x;
    if (t < n)
        shared[t] = (float)t;
    __syncthreads();
    if (t < n)
        out[t] = shared[n - 1 - t];
}

// Module-scope variables, reached from the host by name (cuModuleGetGlobal /
// cuLibraryGetGlobal): each context has its own copy of both.

// A counter in global memory, 4 bytes.
__device__ int dev_counter;

// A table in constant memory, 16 floats (64 bytes).
__constant__ float const_table[16];

// read_globals(float* out): out[i] = const_table[i] + dev_counter for i < 16. Launch with at
// least 16 threads in total; out holds 16 floats.
extern "C" __global__ void read_globals(float* out)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < 16)
        out[i] = const_table[i] + (float)dev_counter;
}

// increment_counter(): dev_counter += 1 per thread (atomicAdd); launch with k threads in
// total to add k.
extern "C" __global__ void increment_counter()
{
    atomicAdd(&dev_counter, 1);
}

// vector_types(float2 a, float4 b, int4 c, double2 d, float* out): built-in vector types by
// value (device alignments: float2 8, float4 16, int4 16, double2 16). Writes 12 floats:
//     out[0..2] = a.x, a.y
//     out[2..6] = b.x, b.y, b.z, b.w
//     out[6..10] = c.x, c.y, c.z, c.w   (converted to float)
//     out[10..12] = d.x, d.y            (converted to float)
// Launch with a single thread.
extern "C" __global__ void vector_types(float2 a, float4 b, int4 c, double2 d, float* out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    out[0] = a.x;
    out[1] = a.y;
    out[2] = b.x;
    out[3] = b.y;
    out[4] = b.z;
    out[5] = b.w;
    out[6] = (float)c.x;
    out[7] = (float)c.y;
    out[8] = (float)c.z;
    out[9] = (float)c.w;
    out[10] = (float)d.x;
    out[11] = (float)d.y;
}

// sleep_ns(unsigned ns): thread 0 sleeps about ns nanoseconds in steps of at most 1 ms (the
// __nanosleep limit), so stream/event tests can observe work that has not finished yet.
extern "C" __global__ void sleep_ns(unsigned ns)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    while (ns > 0) {
        unsigned step = ns < 1000000u ? ns : 1000000u;
        __nanosleep(step);
        ns -= step;
    }
}

// grid_sync_sum(const int* in, int* partial, int* total, int n): a grid-wide barrier
// (cooperative_groups grid.sync()), which is only valid in a cooperative launch
// (cuLaunchCooperativeKernel, or cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE) with
// every block resident at once.
//   Phase 1: block b writes the sum of its grid-stride share of in[0..n) to partial[b].
//   grid.sync()
//   Phase 2: thread 0 of block 0 writes partial[0] + .. + partial[gridDim.x - 1] to *total.
// partial holds gridDim.x ints. Without the barrier phase 2 could read unwritten partials.
// Block size must be a power of two, at most 1024.
extern "C" __global__ void grid_sync_sum(const int* in, int* partial, int* total, int n)
{
    __shared__ int block_sum[1024];
    cg::grid_group grid = cg::this_grid();

    int sum = 0;
    for (int i = blockDim.x * blockIdx.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    block_sum[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            block_sum[threadIdx.x] += block_sum[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = block_sum[0];

    grid.sync();

    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int t = 0;
        for (unsigned b = 0; b < gridDim.x; ++b)
            t += partial[b];
        *total = t;
    }
}
