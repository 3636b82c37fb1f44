//! A communicator of one rank: every collective, in every element type, with its result
//! checked; in place and in groups; split, finalize, destroy, a non-blocking communicator.
//! (With one rank every result is the input: what these tests check is that the calls, their
//! arguments and the buffers reach NCCL as they should.)

use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver_nccl::{CommConfig, Communicator, Group, ReduceOp};

use crate::common::{download, gpu, nccl, one_rank, stream, upload, values, FromSmall};

/// Every collective of one rank, out of place and in place, for one element type.
fn every_collective<T: FromSmall>(comm: &Communicator) {
    let ctx = comm.context();
    let s = stream(ctx);
    let n = 1000;
    let data: Vec<T> = values(n, 3);
    let send = upload(ctx, &data);

    for op in [
        ReduceOp::SUM,
        ReduceOp::PROD,
        ReduceOp::MAX,
        ReduceOp::MIN,
        ReduceOp::AVG,
    ] {
        let mut recv = upload(ctx, &values::<T>(n, 9));
        comm.all_reduce(&send.as_view(), &mut recv.as_view_mut(), op, &s)
            .unwrap();
        assert_eq!(download(comm, &s, &recv), data, "all_reduce {op:?}");
    }
    let mut buf = upload(ctx, &data);
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), data, "all_reduce_in_place");

    let mut recv = upload(ctx, &values::<T>(n, 9));
    comm.broadcast(Some(&send.as_view()), &mut recv.as_view_mut(), 0, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &recv), data, "broadcast");
    let mut buf = upload(ctx, &data);
    comm.broadcast_in_place(&mut buf.as_view_mut(), 0, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), data, "broadcast_in_place");

    let mut recv = upload(ctx, &values::<T>(n, 9));
    comm.reduce(
        &send.as_view(),
        Some(&mut recv.as_view_mut()),
        ReduceOp::MAX,
        0,
        &s,
    )
    .unwrap();
    assert_eq!(download(comm, &s, &recv), data, "reduce");
    let mut buf = upload(ctx, &data);
    comm.reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, 0, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), data, "reduce_in_place");

    let mut recv = upload(ctx, &values::<T>(n, 9));
    comm.all_gather(&send.as_view(), &mut recv.as_view_mut(), &s)
        .unwrap();
    assert_eq!(download(comm, &s, &recv), data, "all_gather");
    let mut buf = upload(ctx, &data);
    comm.all_gather_in_place(&mut buf.as_view_mut(), &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), data, "all_gather_in_place");

    let mut recv = upload(ctx, &values::<T>(n, 9));
    comm.reduce_scatter(&send.as_view(), &mut recv.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &recv), data, "reduce_scatter");
    let mut buf = upload(ctx, &data);
    comm.reduce_scatter_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), data, "reduce_scatter_in_place");

    // Send to and receive from itself: together, in a group.
    let mut recv = upload(ctx, &values::<T>(n, 9));
    {
        let mut group = Group::start().unwrap();
        group.send(comm, send.as_view(), 0, &s).unwrap();
        group.recv(comm, recv.as_view_mut(), 0, &s).unwrap();
        group.end().unwrap();
    }
    assert_eq!(download(comm, &s, &recv), data, "send/recv");
}

#[gpu_test]
fn every_collective_of_one_rank_in_every_element_type() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    assert_eq!(comm.device(), ctx.device());
    every_collective::<i8>(&comm);
    every_collective::<u8>(&comm);
    every_collective::<i32>(&comm);
    every_collective::<u32>(&comm);
    every_collective::<i64>(&comm);
    every_collective::<u64>(&comm);
    every_collective::<f32>(&comm);
    every_collective::<f64>(&comm);
    every_collective::<half::f16>(&comm);
    every_collective::<half::bf16>(&comm);
    comm.check_async_error().unwrap();
}

#[gpu_test]
fn a_non_blocking_communicator_with_a_timeout_runs_every_collective() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new().timeout(Duration::from_secs(60)));
    assert_eq!(comm.timeout(), Some(Duration::from_secs(60)));
    every_collective::<f32>(&comm);
    every_collective::<half::bf16>(&comm);
    // Dropped: destroyed (in the background, as it is non-blocking).
    let before = cuda_driver_nccl::drop_error_count();
    drop(comm);
    assert_eq!(cuda_driver_nccl::drop_error_count(), before);
}

#[gpu_test]
fn grouped_collectives_run_at_the_group_s_end_and_a_dropped_group_ends_too() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let a: Vec<f32> = values(4096, 1);
    let b: Vec<f32> = values(4096, 2);
    let (send_a, send_b) = (upload(&ctx, &a), upload(&ctx, &b));
    let mut recv_a = upload(&ctx, &vec![0.0f32; 4096]);
    let mut recv_b = upload(&ctx, &vec![0.0f32; 4096]);
    let mut gathered = upload(&ctx, &vec![0.0f32; 4096]);
    {
        let mut group = Group::start().unwrap();
        group
            .all_reduce(
                &comm,
                send_a.as_view(),
                recv_a.as_view_mut(),
                ReduceOp::SUM,
                &s,
            )
            .unwrap();
        group
            .reduce(
                &comm,
                send_b.as_view(),
                Some(recv_b.as_view_mut()),
                ReduceOp::SUM,
                0,
                &s,
            )
            .unwrap();
        group
            .all_gather(&comm, send_a.as_view(), gathered.as_view_mut(), &s)
            .unwrap();
        group.end().unwrap();
    }
    assert_eq!(download(&comm, &s, &recv_a), a);
    assert_eq!(download(&comm, &s, &recv_b), b);
    assert_eq!(download(&comm, &s, &gathered), a);

    // A group dropped without `end` ends in Drop: its operation runs.
    let mut buf = upload(&ctx, &vec![0.0f32; 4096]);
    {
        let mut group = Group::start().unwrap();
        group
            .broadcast(&comm, Some(send_b.as_view()), buf.as_view_mut(), 0, &s)
            .unwrap();
    }
    assert_eq!(download(&comm, &s, &buf), b);
    // And the thread can open a group again.
    Group::start().unwrap().end().unwrap();
}

#[gpu_test]
fn split_makes_a_new_communicator_or_none() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    if nccl().functions().ncclCommSplit.is_none() {
        crate::common::skip(format!("NCCL {} has no ncclCommSplit", nccl().version()));
    }
    let child = comm
        .split(Some(7), 0, None)
        .unwrap()
        .expect("color 7 joins");
    assert_eq!((child.rank(), child.size()), (0, 1));
    assert!(comm.split(None, 0, None).unwrap().is_none());
    let s = stream(&ctx);
    let data: Vec<i32> = values(333, 4);
    let mut buf = upload(&ctx, &data);
    child
        .all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(download(&child, &s, &buf), data);
    // A child with its own (non-blocking) configuration.
    let timed = comm
        .split(
            Some(1),
            0,
            Some(&CommConfig::new().timeout(Duration::from_secs(60))),
        )
        .unwrap()
        .unwrap();
    assert_eq!(timed.timeout(), Some(Duration::from_secs(60)));
    timed.finalize().unwrap();
    child.destroy().unwrap();
}

#[gpu_test]
fn finalize_and_destroy_return_their_errors_and_free_the_communicator() {
    let ctx = gpu(0);
    let before = cuda_driver_nccl::drop_error_count();
    one_rank(&ctx, &CommConfig::new()).finalize().unwrap();
    one_rank(&ctx, &CommConfig::new()).destroy().unwrap();
    one_rank(&ctx, &CommConfig::new().timeout(Duration::from_secs(60)))
        .finalize()
        .unwrap();
    drop(one_rank(&ctx, &CommConfig::new()));
    assert_eq!(cuda_driver_nccl::drop_error_count(), before);
}

#[gpu_test]
fn the_loaded_library_is_nccl_2_and_the_header_s_functions_resolve() {
    let nccl = nccl();
    assert_eq!(nccl.version().major, 2);
    let f = nccl.functions();
    assert!(f.ncclGetVersion.is_some() && f.ncclAllReduce.is_some() && f.ncclGroupEnd.is_some());
    crate::common::note(format!("NCCL {} from {}", nccl.version(), nccl.path()));
    assert_eq!(
        std::env::var(cuda_driver_nccl::NVLS_VAR).as_deref(),
        Ok("0"),
        "NVLink multicast must stay off"
    );
}
