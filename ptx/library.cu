// Device code for context-independent loading (cuLibraryLoadData / cuLibraryGetKernel, CUDA
// 12.0+). A `__managed__` variable is one allocation shared by every context and device,
// reachable from the host through cuLibraryGetManaged, unlike a `__device__` variable, of
// which each context holds its own copy.
//
// myKernel(int* out, int n), launched with at least n threads in total:
//     out[i] = i                       for every i < n (a per-context device buffer);
//     managed_data[i] += 1.0f          for every i < 256 (threads i < 256 must exist);
//     launch_count += 1                once per launch, by thread 0 (atomicAdd).
// After k launches (each synchronised before the next), launch_count == k and every
// managed_data[i] == k, whichever devices the launches ran on.

// Launches of myKernel so far, over all contexts and devices.
__managed__ int launch_count;

// 256 floats, each incremented once per launch.
__managed__ float managed_data[256];

extern "C" __global__ void myKernel(int* out, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        out[i] = i;
    if (i < 256)
        managed_data[i] += 1.0f;
    if (i == 0)
        atomicAdd(&launch_count, 1);
}
