// Kernels with many parameters for the launch benchmark (more than the typed launchers of
// cuda-driver-build take, so they are not in bench.cu, which the examples' build generates
// launchers for).

// args16(unsigned* out, unsigned a1, ..., unsigned a15): out[0] = a1 + ... + a15; a launch
// with 16 parameters, one thread.
extern "C" __global__ void args16(unsigned* out, unsigned a1, unsigned a2, unsigned a3, unsigned a4, unsigned a5, unsigned a6, unsigned a7, unsigned a8, unsigned a9, unsigned a10, unsigned a11, unsigned a12, unsigned a13, unsigned a14, unsigned a15)
{
    out[0] = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15;
}

// args64(unsigned* out, unsigned a1, ..., unsigned a63): out[0] = a1 + ... + a63; a launch
// with 64 parameters, one thread.
extern "C" __global__ void args64(unsigned* out, unsigned a1, unsigned a2, unsigned a3, unsigned a4, unsigned a5, unsigned a6, unsigned a7, unsigned a8, unsigned a9, unsigned a10, unsigned a11, unsigned a12, unsigned a13, unsigned a14, unsigned a15, unsigned a16, unsigned a17, unsigned a18, unsigned a19, unsigned a20, unsigned a21, unsigned a22, unsigned a23, unsigned a24, unsigned a25, unsigned a26, unsigned a27, unsigned a28, unsigned a29, unsigned a30, unsigned a31, unsigned a32, unsigned a33, unsigned a34, unsigned a35, unsigned a36, unsigned a37, unsigned a38, unsigned a39, unsigned a40, unsigned a41, unsigned a42, unsigned a43, unsigned a44, unsigned a45, unsigned a46, unsigned a47, unsigned a48, unsigned a49, unsigned a50, unsigned a51, unsigned a52, unsigned a53, unsigned a54, unsigned a55, unsigned a56, unsigned a57, unsigned a58, unsigned a59, unsigned a60, unsigned a61, unsigned a62, unsigned a63)
{
    out[0] = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17 + a18 + a19 + a20 + a21 + a22 + a23 + a24 + a25 + a26 + a27 + a28 + a29 + a30 + a31 + a32 + a33 + a34 + a35 + a36 + a37 + a38 + a39 + a40 + a41 + a42 + a43 + a44 + a45 + a46 + a47 + a48 + a49 + a50 + a51 + a52 + a53 + a54 + a55 + a56 + a57 + a58 + a59 + a60 + a61 + a62 + a63;
}
