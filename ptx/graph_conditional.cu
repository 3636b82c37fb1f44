// xtask-nvcc: -rdc=true
// Kernels that set graph conditional handles (cuda-driver/tests/gpu/graph/conditional.rs).
// They call cudaGraphSetConditional, which the device runtime library implements: the PTX is
// linked with libcudadevrt.a (cuLinkAddFile, CU_JIT_INPUT_LIBRARY) before it loads.
#include <cuda_device_runtime_api.h>

// The body of a while-conditional loop: thread 0 adds 1 to *counter and keeps the loop
// running while *counter < limit (cudaGraphSetConditional on the node's handle).
extern "C" __global__ void loop_step(int* counter, int limit, cudaGraphConditionalHandle handle)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int c = *counter + 1;
        *counter = c;
        cudaGraphSetConditional(handle, c < limit ? 1u : 0u);
    }
}

// Sets the handle of an if-conditional node to `value` (thread 0).
extern "C" __global__ void set_condition(cudaGraphConditionalHandle handle, unsigned int value)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        cudaGraphSetConditional(handle, value);
}

