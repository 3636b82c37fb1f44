// xtask-nvcc: -arch=compute_90
//
// Thread-block clusters (compute capability 9.0, Hopper): the cluster shape is not fixed at
// compile time, so launch with cuLaunchKernelEx and the attribute
// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (the grid size must be a multiple of the cluster
// size in each dimension).
//
// cluster_info(unsigned* out), for a one-dimensional grid and cluster: thread 0 of block b
// writes four words,
//     out[4 * b + 0] = cluster.block_rank()    rank of the block in its cluster
//     out[4 * b + 1] = cluster.num_blocks()    blocks per cluster
//     out[4 * b + 2] = grid.cluster_rank()     rank of the cluster in the grid
//     out[4 * b + 3] = blockIdx.x of the cluster's rank-0 block, read from that block's
//                      shared memory (distributed shared memory, map_shared_rank)
// so with clusters of size k: out[4b] == b % k, out[4b+1] == k, out[4b+2] == b / k and
// out[4b+3] == b - b % k. out holds 4 * gridDim.x unsigned ints.

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __global__ void cluster_info(unsigned* out)
{
    __shared__ unsigned block_id;
    cg::cluster_group cluster = cg::this_cluster();

    if (threadIdx.x == 0)
        block_id = blockIdx.x;
    // Every block of the cluster has written its block_id.
    cluster.sync();

    if (threadIdx.x == 0) {
        unsigned* first = cluster.map_shared_rank(&block_id, 0);
        unsigned* mine = out + 4 * blockIdx.x;
        mine[0] = cluster.block_rank();
        mine[1] = cluster.num_blocks();
        mine[2] = (unsigned)cg::this_grid().cluster_rank();
        mine[3] = *first;
    }
    // Keep every block's shared memory alive until the other blocks have read it.
    cluster.sync();
}
