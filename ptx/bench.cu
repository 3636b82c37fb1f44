// Kernels for the launch-overhead benchmark.

// empty(): does nothing; measures the bare cost of a launch with no parameters.
extern "C" __global__ void empty()
{
}

// add4(const float* a, const float* b, float* c, int n): c[i] = a[i] + b[i] for i < n;
// a launch with four parameters, to measure the cost of passing them.
extern "C" __global__ void add4(const float* a, const float* b, float* c, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

// args1(unsigned* out): out[0] += 1; a launch with one parameter, one thread.
extern "C" __global__ void args1(unsigned* out)
{
    out[0] += 1u;
}
