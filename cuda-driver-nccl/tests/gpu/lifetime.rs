//! The buffers of a queued collective outlive it: memory that is not stream-ordered can be
//! dropped right after the call (its release waits for the work of its context, NCCL's
//! included), and a group holds its buffers until it ends (the `compile_fail` test in
//! `group.rs` shows they cannot be dropped before).

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, DeviceBuffer, Stream};
use cuda_driver_nccl::{CommConfig, Group, ReduceOp};

use crate::common::{gpu, one_rank, stream, upload, values};

#[gpu_test]
fn a_source_dropped_right_after_the_call_is_freed_after_the_collective() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    // Non-blocking: nothing on the legacy stream (the frees, the garbage copies) waits for it,
    // only the release of the memory does.
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let n = 64 << 20; // 256 MiB of f32: the copy takes long enough to be pending at the drop
    let data: Vec<f32> = values(n, 7);
    let mut recvs = Vec::new();
    for round in 0..3 {
        let send = upload(&ctx, &data);
        let mut recv = DeviceBuffer::<f32>::zeroed(&ctx, n).unwrap();
        comm.all_reduce(&send.as_view(), &mut recv.as_view_mut(), ReduceOp::SUM, &s)
            .unwrap();
        // cuMemFree waits for the work queued on the memory, on any stream of the context.
        drop(send);
        // Reuse the freed memory at once: a collective still reading it would see this.
        let garbage = upload(&ctx, &vec![-1.0f32; n]);
        recvs.push((round, recv, garbage));
    }
    comm.synchronize(&s).unwrap();
    for (round, recv, _garbage) in recvs {
        let got = recv.to_vec().unwrap();
        assert!(
            got == data,
            "round {round}: the all-reduce read freed memory"
        );
    }
}

#[gpu_test]
fn a_group_queues_its_buffers_when_it_ends_and_they_are_intact() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let data: Vec<u32> = values(1 << 20, 3);
    let send = upload(&ctx, &data);
    let mut recv = DeviceBuffer::<u32>::zeroed(&ctx, 1 << 20).unwrap();
    let mut group = Group::start().unwrap();
    group
        .all_reduce(&comm, send.as_view(), recv.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    // The group holds the views until it ends (NCCL may queue the work at the call or at the
    // end; on an H100 with NCCL 2.28 it was queued before the end).
    group.end().unwrap();
    drop(send);
    comm.synchronize(&s).unwrap();
    assert_eq!(recv.to_vec().unwrap(), data);
}
