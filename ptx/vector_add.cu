// VecAdd of the CUDA Programming Guide (appendix "Driver API", sample vectorAddDrv):
// C[i] = A[i] + B[i] for every i < N.
//
// Launch: one thread per element, e.g. 256 threads per block and
// (N + 255) / 256 blocks. Parameters: (const float* A, const float* B, float* C, int N).

extern "C" __global__ void VecAdd(const float* A, const float* B, float* C, int N)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < N)
        C[i] = A[i] + B[i];
}
