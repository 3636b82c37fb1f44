// The parameter list of the CUDA Programming Guide's packed-parameter example (appendix
// "Driver API", Kernel Execution): (int i, float4 f4, char c, float f, float* out, float2 f2),
// in that order. The host packs them into one buffer by the device alignments (int 4,
// float4 16, char 1, float 4, pointer 8, float2 8) and passes it through
// CU_LAUNCH_PARAM_BUFFER_POINTER / CU_LAUNCH_PARAM_BUFFER_SIZE.
//
// One thread writes back every value it received, as 32-bit words (floats, or the bit
// patterns of the integers), so the host can check each field of the buffer:
//
//     out[0]      bits of i
//     out[1..5]   f4.x, f4.y, f4.z, f4.w
//     out[5]      bits of (int)c          (char is signed, as on the x86-64 / aarch64 host)
//     out[6]      f
//     out[7..9]   f2.x, f2.y
//     out[9]      bits of the low 32 bits of out (the pointer itself)
//     out[10]     bits of the high 32 bits of out
//
// Launch with a single thread; out holds 11 floats.

extern "C" __global__ void param_buffer(int i, float4 f4, char c, float f, float* out, float2 f2)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    unsigned long long address = (unsigned long long)out;
    out[0] = __int_as_float(i);
    out[1] = f4.x;
    out[2] = f4.y;
    out[3] = f4.z;
    out[4] = f4.w;
    out[5] = __int_as_float((int)c);
    out[6] = f;
    out[7] = f2.x;
    out[8] = f2.y;
    out[9] = __uint_as_float((unsigned)(address & 0xffffffffu));
    out[10] = __uint_as_float((unsigned)(address >> 32));
}
