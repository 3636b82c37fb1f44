// Kernels for the graph tests (cuda-driver/tests/gpu/graph/), the `graphs` example and the
// graph rows of the benchmark.

// x[i] = x[i] * a + b for i < n.
extern "C" __global__ void axpb(float* x, float a, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * a + b;
}

// x[i] += 1 for i < n (int).
extern "C" __global__ void inc(int* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += 1;
}

// An empty kernel: the unit of host cost in the benchmark.
extern "C" __global__ void noop() {}

// First stage of the two-stage reduction (simpleCudaGraphs): each block sums its grid-stride
// share of `in` (n elements) into partial[blockIdx.x]; blockDim.x is 256.
extern "C" __global__ void reduce_partial(const float* in, float* partial, int n)
{
    __shared__ float s[256];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += in[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

// Second stage: one block of 256 threads sums partial[0..m) into *out.
extern "C" __global__ void reduce_final(const float* partial, float* out, int m)
{
    __shared__ float s[256];
    float sum = 0.0f;
    for (int i = threadIdx.x; i < m; i += blockDim.x)
        sum += partial[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = s[0];
}
