// xtask-nvcc: -arch=compute_90
//
// Tensor memory accelerator (compute capability 9.0, Hopper): one block loads one tile of
// a 2D float tensor into shared memory with cp.async.bulk.tensor through a tensor map,
// waits on an mbarrier, and writes the tile to `out` (row-major, box_w x box_h).

// CUtensorMap as cuda.h 13.0 declares it: 128 opaque bytes, 128-byte aligned.
struct alignas(128) TensorMap {
    unsigned long long opaque[16];
};

#define MAX_TILE_ELEMS 4096

// Loads the box_w x box_h tile whose first element is (x0, y0) (x the fastest dimension)
// and writes it to out[0 .. box_w * box_h]. Launch with one block; box_w * 4 must be a
// multiple of 16 and box_w * box_h <= MAX_TILE_ELEMS.
extern "C" __global__ void tma_load_tile(const __grid_constant__ TensorMap map, float* out,
                                         int x0, int y0, int box_w, int box_h)
{
    __shared__ alignas(128) float tile[MAX_TILE_ELEMS];
    __shared__ alignas(8) unsigned long long bar;

    unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned tile_addr = (unsigned)__cvta_generic_to_shared(tile);
    unsigned bytes = (unsigned)(box_w * box_h * sizeof(float));

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar_addr), "r"(1));
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar_addr), "r"(bytes) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%2, %3}], [%4];"
            :: "r"(tile_addr), "l"((unsigned long long)&map), "r"(x0), "r"(y0), "r"(bar_addr)
            : "memory");
    }
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done) : "r"(bar_addr), "r"(0) : "memory");
    }
    for (int i = threadIdx.x; i < box_w * box_h; i += blockDim.x) {
        out[i] = tile[i];
    }
}
