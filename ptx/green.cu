// Kernels for the green-context and stream memory operation GPU tests.

// Each block records the SM it ran on (%smid) in smids[blockIdx.x].
extern "C" __global__ void record_smid(unsigned int* smids) {
    if (threadIdx.x == 0) {
        unsigned int id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        smids[blockIdx.x] = id;
    }
}
