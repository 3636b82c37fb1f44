// A large module for the loading benchmark: 128 kernels of the same shape, each a short
// unrolled polynomial over its input, so the PTX runs to a few hundred KiB.

#define BIG_KERNEL(n)                                                                   \
    extern "C" __global__ void big_##n(float* out, const float* in, int len)            \
    {                                                                                   \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                  \
        if (i < len) {                                                                  \
            float x = in[i];                                                            \
            _Pragma("unroll") for (int k = 0; k < 16; ++k) x = x * 1.0001f + (float)(n + k); \
            out[i] = x;                                                                 \
        }                                                                               \
    }

#define BIG8(n)                                                                         \
    BIG_KERNEL(n##0) BIG_KERNEL(n##1) BIG_KERNEL(n##2) BIG_KERNEL(n##3)                 \
    BIG_KERNEL(n##4) BIG_KERNEL(n##5) BIG_KERNEL(n##6) BIG_KERNEL(n##7)

BIG8(1) BIG8(2) BIG8(3) BIG8(4) BIG8(5) BIG8(6) BIG8(7) BIG8(8)
BIG8(9) BIG8(10) BIG8(11) BIG8(12) BIG8(13) BIG8(14) BIG8(15) BIG8(16)
