// xtask-nvcc: -rdc=true
//
// Relocatable device code, half of a program that only works once linked: scale_add calls
// helper_op, which is declared here and defined in link_helper.cu. The PTX of this file holds
// an unresolved `.extern .func helper_op`; load it through cuLinkCreate / cuLinkAddData (both
// PTX files) / cuLinkComplete, then cuModuleLoadData of the linked cubin.
//
// scale_add(float* out, const float* in, float s, int n):
//     out[i] = helper_op(in[i], s) = in[i] * s + 1.0f   for every i < n.

// Defined in link_helper.cu (extern "C": the PTX name is plain `helper_op`).
extern "C" __device__ float helper_op(float x, float s);

extern "C" __global__ void scale_add(float* out, const float* in, float s, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        out[i] = helper_op(in[i], s);
}
