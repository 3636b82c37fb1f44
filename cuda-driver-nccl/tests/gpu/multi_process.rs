//! Two processes, one GPU each: this test binary starts itself again as rank 1 (with the
//! variables torchrun sets, on the loopback address), both ranks meet through the crate's
//! rendezvous and run every collective with its result checked; a rank that dies makes the
//! other fail with an error within its timeout instead of hanging. On one GPU they skip
//! ("1 GPU; this test needs two").

use std::time::{Duration, Instant};

use cuda_driver::prelude::*;
use cuda_driver::{Device, DeviceBuffer};
use cuda_driver_nccl::rendezvous::{exchange_unique_id, serve_unique_id, RankEnv};
use cuda_driver_nccl::{CommConfig, Communicator, Error, Group, ReduceOp, UniqueId};

use crate::common::{
    download, gpu, is_child, nccl, spawn_ranks, stream, two_gpus, upload, RANK_TIMEOUT,
};

/// Rank `rank`'s value at index `i`: distinct per rank, exact in f32 sums.
fn value(rank: usize, i: usize) -> f32 {
    ((i % 251) + 1000 * (rank + 1)) as f32
}

/// This process's communicator of `world` ranks: rank 0 (the test itself) serves the id on
/// `listener`, a child rank finds everything in its environment, as under torchrun.
fn join(
    world: usize,
    listener: Option<&std::net::TcpListener>,
    config: &CommConfig,
) -> Communicator {
    let (rank, id) = match listener {
        Some(l) => {
            let id = UniqueId::new().unwrap();
            serve_unique_id(l, world, &id, RANK_TIMEOUT).unwrap();
            (0, id)
        }
        None => {
            let env = RankEnv::from_env()
                .unwrap()
                .expect("a child rank has RANK set");
            assert_eq!(env.world_size, world);
            (env.rank, exchange_unique_id(&env, RANK_TIMEOUT).unwrap())
        }
    };
    let ctx = gpu(rank % Device::count().unwrap());
    Communicator::init_rank(&ctx, world, rank, &id, config).unwrap()
}

/// Every collective between the ranks of `comm`, each result checked on this rank.
fn every_collective(comm: &Communicator) {
    let (rank, world) = (comm.rank(), comm.size());
    let ctx = comm.context();
    let s = stream(ctx);
    let n = 10_000;
    let mine: Vec<f32> = (0..n).map(|i| value(rank, i)).collect();
    let sum: Vec<f32> = (0..n)
        .map(|i| (0..world).map(|r| value(r, i)).sum())
        .collect();
    let send = upload(ctx, &mine);

    let mut recv = DeviceBuffer::<f32>::zeroed(ctx, n).unwrap();
    comm.all_reduce(&send.as_view(), &mut recv.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &recv), sum, "all_reduce sum");
    comm.all_reduce(&send.as_view(), &mut recv.as_view_mut(), ReduceOp::MAX, &s)
        .unwrap();
    let max: Vec<f32> = (0..n).map(|i| value(world - 1, i)).collect();
    assert_eq!(download(comm, &s, &recv), max, "all_reduce max");
    let mut buf = upload(ctx, &mine);
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), sum, "all_reduce_in_place");

    // Broadcast from the last rank, the root passing its buffer, the others none.
    let root = world - 1;
    let mut recv = DeviceBuffer::<f32>::zeroed(ctx, n).unwrap();
    let sent = (rank == root).then(|| send.as_view());
    comm.broadcast(sent.as_ref(), &mut recv.as_view_mut(), root, &s)
        .unwrap();
    let roots: Vec<f32> = (0..n).map(|i| value(root, i)).collect();
    assert_eq!(download(comm, &s, &recv), roots, "broadcast");
    let mut buf = upload(ctx, &mine);
    comm.broadcast_in_place(&mut buf.as_view_mut(), root, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &buf), roots, "broadcast_in_place");

    // Reduce to rank 0.
    let mut recv = DeviceBuffer::<f32>::zeroed(ctx, n).unwrap();
    if rank == 0 {
        comm.reduce(
            &send.as_view(),
            Some(&mut recv.as_view_mut()),
            ReduceOp::SUM,
            0,
            &s,
        )
        .unwrap();
        assert_eq!(download(comm, &s, &recv), sum, "reduce");
    } else {
        comm.reduce(&send.as_view(), None, ReduceOp::SUM, 0, &s)
            .unwrap();
        comm.synchronize(&s).unwrap();
    }

    // All-gather: rank r's part at r * n.
    let mut gathered = DeviceBuffer::<f32>::zeroed(ctx, n * world).unwrap();
    comm.all_gather(&send.as_view(), &mut gathered.as_view_mut(), &s)
        .unwrap();
    let all: Vec<f32> = (0..world)
        .flat_map(|r| (0..n).map(move |i| value(r, i)))
        .collect();
    assert_eq!(download(comm, &s, &gathered), all, "all_gather");
    let mut parts = DeviceBuffer::<f32>::zeroed(ctx, n * world).unwrap();
    parts
        .slice_mut(rank * n..(rank + 1) * n)
        .unwrap()
        .copy_from_host(&mine)
        .unwrap();
    comm.all_gather_in_place(&mut parts.as_view_mut(), &s)
        .unwrap();
    assert_eq!(download(comm, &s, &parts), all, "all_gather_in_place");

    // Reduce-scatter: every rank sends `world * n` elements (part p of rank r: value(r, p*n+i)),
    // rank p keeps the sum of parts p.
    let big: Vec<f32> = (0..n * world).map(|i| value(rank, i)).collect();
    let big_send = upload(ctx, &big);
    let mut part = DeviceBuffer::<f32>::zeroed(ctx, n).unwrap();
    comm.reduce_scatter(
        &big_send.as_view(),
        &mut part.as_view_mut(),
        ReduceOp::SUM,
        &s,
    )
    .unwrap();
    let want: Vec<f32> = (0..n)
        .map(|i| (0..world).map(|r| value(r, rank * n + i)).sum())
        .collect();
    assert_eq!(download(comm, &s, &part), want, "reduce_scatter");
    let mut inplace = upload(ctx, &big);
    comm.reduce_scatter_in_place(&mut inplace.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    let got = download(comm, &s, &inplace);
    assert_eq!(
        &got[rank * n..(rank + 1) * n],
        &want[..],
        "reduce_scatter_in_place"
    );

    // A ring exchange: send to the next rank, receive from the previous, in one group.
    let (next, prev) = ((rank + 1) % world, (rank + world - 1) % world);
    let mut from_prev = DeviceBuffer::<f32>::zeroed(ctx, n).unwrap();
    {
        let mut group = Group::start().unwrap();
        group.send(comm, send.as_view(), next, &s).unwrap();
        group.recv(comm, from_prev.as_view_mut(), prev, &s).unwrap();
        group.end().unwrap();
    }
    let prevs: Vec<f32> = (0..n).map(|i| value(prev, i)).collect();
    assert_eq!(download(comm, &s, &from_prev), prevs, "send/recv");

    // Other element types reach NCCL with their own data type.
    let ints: Vec<i64> = (0..n).map(|i| (i as i64) * (rank as i64 + 1)).collect();
    let mut ib = upload(ctx, &ints);
    comm.all_reduce_in_place(&mut ib.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    let tri = (world * (world + 1) / 2) as i64;
    let want: Vec<i64> = (0..n).map(|i| i as i64 * tri).collect();
    assert_eq!(download(comm, &s, &ib), want, "all_reduce i64");
    let halves: Vec<half::bf16> = (0..n)
        .map(|i| half::bf16::from_f32((i % 8) as f32))
        .collect();
    let mut hb = upload(ctx, &halves);
    comm.all_reduce_in_place(&mut hb.as_view_mut(), ReduceOp::MAX, &s)
        .unwrap();
    assert_eq!(download(comm, &s, &hb), halves, "all_reduce bf16 max");

    // Split by parity of the rank: with two ranks, two communicators of one.
    if nccl().functions().ncclCommSplit.is_some() {
        let sub = comm
            .split(Some((rank % 2) as u32), rank as i32, None)
            .unwrap()
            .expect("every rank has a color");
        assert_eq!(sub.size(), (0..world).filter(|r| r % 2 == rank % 2).count());
        let mut b = upload(ctx, &mine);
        sub.all_reduce_in_place(&mut b.as_view_mut(), ReduceOp::SUM, &s)
            .unwrap();
        sub.synchronize(&s).unwrap();
        // And all of them together, in reverse order.
        let rev = comm.split(Some(0), -(rank as i32), None).unwrap().unwrap();
        assert_eq!((rev.rank(), rev.size()), (world - 1 - rank, world));
    }
}

#[gpu_test]
fn two_processes_run_every_collective() {
    if is_child() {
        let comm = join(2, None, &CommConfig::new());
        every_collective(&comm);
        comm.finalize().unwrap();
        return;
    }
    two_gpus();
    nccl();
    let (listener, mut children) = spawn_ranks(2);
    let comm = join(2, Some(&listener), &CommConfig::new());
    every_collective(&comm);
    comm.finalize().unwrap();
    children.pop().unwrap().finish();
}

#[gpu_test]
fn two_processes_with_timeouts_run_every_collective() {
    let config = CommConfig::new().timeout(Duration::from_secs(60));
    if is_child() {
        let comm = join(2, None, &config);
        every_collective(&comm);
        return; // dropped: destroyed in the background (non-blocking)
    }
    two_gpus();
    nccl();
    let (listener, mut children) = spawn_ranks(2);
    let comm = join(2, Some(&listener), &config);
    every_collective(&comm);
    drop(comm);
    children.pop().unwrap().finish();
}

#[gpu_test]
fn a_rank_that_dies_makes_the_other_fail_with_an_error_not_hang() {
    let timeout = Duration::from_secs(20);
    let config = CommConfig::new().timeout(timeout);
    if is_child() {
        let comm = join(2, None, &config);
        let s = stream(comm.context());
        let mut buf = upload(comm.context(), &vec![1.0f32; 1024]);
        comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
            .unwrap();
        comm.synchronize(&s).unwrap();
        // Die without a word: no destroy, no finalize, as a crashed process would.
        std::process::exit(3);
    }
    two_gpus();
    nccl();
    let (listener, mut children) = spawn_ranks(2);
    let comm = join(2, Some(&listener), &config);
    let s = stream(comm.context());
    let mut buf = upload(comm.context(), &vec![1.0f32; 1024]);
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    comm.synchronize(&s).unwrap();
    assert_eq!(buf.to_vec().unwrap(), vec![2.0f32; 1024]);
    let output = children.pop().unwrap().reap_any();
    // The peer is gone: the next collective cannot complete.
    let start = Instant::now();
    let result = comm
        .all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .and_then(|()| comm.synchronize(&s));
    let elapsed = start.elapsed();
    let e = result.expect_err("a collective with a dead peer cannot succeed");
    assert!(
        matches!(
            e,
            Error::Async { .. } | Error::Timeout { .. } | Error::Nccl { .. }
        ),
        "{e}\n{output}"
    );
    assert!(
        elapsed < timeout * 2 + Duration::from_secs(10),
        "took {elapsed:?} to notice"
    );
    crate::common::note(format!("after the peer died: {e} ({elapsed:?})"));
    // Aborted (Async, Timeout) or refused (Nccl): either way it stays an error, never a hang.
    assert!(
        comm.is_aborted() || comm.check_async_error().is_err() || matches!(e, Error::Nccl { .. })
    );
    drop(comm);
    drop(listener);
}

#[gpu_test]
fn a_rank_that_never_comes_makes_the_rendezvous_fail_in_time() {
    // No second process at all: rank 0's rendezvous gives up after its timeout, naming rank 1.
    nccl();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let id = UniqueId::new().unwrap();
    let start = Instant::now();
    let e = serve_unique_id(&listener, 2, &id, Duration::from_millis(500)).unwrap_err();
    assert!(
        e.to_string().contains("ranks 1 never fetched the id"),
        "{e}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}
