//! Bad inputs are clear errors, before NCCL is called: lengths that do not agree, buffers
//! and streams of another context, stream-ordered memory on another stream, ranks out of
//! range, a communicator used after abort, operations outside an open group, calls inside a
//! host function; and the caller's context stack is left as it was.

use std::sync::{Arc, Mutex};

use cuda_driver::prelude::*;
use cuda_driver::{types::ContextFlags, Context, DeviceBuffer};
use cuda_driver_nccl::{CommConfig, Communicator, Error, Group, ReduceOp, UniqueId};

use crate::common::{gpu, nccl, one_rank, stream, upload, values};

#[track_caller]
fn cuda_error(e: Error) -> cuda_driver::Error {
    match e {
        Error::Cuda(e) => e,
        other => panic!("expected a cuda-driver error, got {other:?}"),
    }
}

#[gpu_test]
fn mismatched_counts_are_refused() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let send = upload(&ctx, &values::<f32>(100, 1));
    let mut short = DeviceBuffer::<f32>::zeroed(&ctx, 99).unwrap();
    let e = comm
        .all_reduce(&send.as_view(), &mut short.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap_err();
    assert!(
        matches!(
            cuda_error(e),
            cuda_driver::Error::LengthMismatch {
                what: "ncclAllReduce",
                dst: 99,
                src: 100
            }
        ),
        "all_reduce"
    );
    let e = comm
        .broadcast(Some(&send.as_view()), &mut short.as_view_mut(), 0, &s)
        .unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::LengthMismatch { .. }
    ));
    let e = comm
        .reduce(
            &send.as_view(),
            Some(&mut short.as_view_mut()),
            ReduceOp::SUM,
            0,
            &s,
        )
        .unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::LengthMismatch { .. }
    ));
    // An all-gather receives size() times what it sends; a reduce-scatter sends size() times
    // what it receives.
    let e = comm
        .all_gather(&send.as_view(), &mut short.as_view_mut(), &s)
        .unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::LengthMismatch { .. }
    ));
    let e = comm
        .reduce_scatter(&send.as_view(), &mut short.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::LengthMismatch { .. }
    ));
    // The message names the operation and both lengths.
    let e = comm
        .all_reduce(&send.as_view(), &mut short.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "length mismatch in ncclAllReduce: destination holds 99 elements, source 100"
    );
    // Nothing was queued; the communicator works.
    let mut ok = DeviceBuffer::<f32>::zeroed(&ctx, 100).unwrap();
    comm.all_reduce(&send.as_view(), &mut ok.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    comm.synchronize(&s).unwrap();
}

#[gpu_test]
fn ranks_out_of_range_and_missing_root_buffers_are_refused() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let send = upload(&ctx, &values::<u32>(10, 1));
    let mut recv = DeviceBuffer::<u32>::zeroed(&ctx, 10).unwrap();
    let e = comm
        .broadcast(Some(&send.as_view()), &mut recv.as_view_mut(), 1, &s)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::RankOutOfRange {
                rank: 1,
                size: 1,
                ..
            }
        ),
        "{e}"
    );
    let e = comm.send(&send.as_view(), 5, &s).unwrap_err();
    assert!(matches!(e, Error::RankOutOfRange { rank: 5, .. }), "{e}");
    // The root must pass the buffer it sends (broadcast) or receives into (reduce).
    let e = comm
        .broadcast(None, &mut recv.as_view_mut(), 0, &s)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = comm
        .reduce(&send.as_view(), None, ReduceOp::SUM, 0, &s)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // A communicator of 0 ranks, or a rank past the size, is never created.
    let id = nccl().unique_id().unwrap();
    let e = Communicator::init_rank(&ctx, 2, 2, &id, &CommConfig::new()).unwrap_err();
    assert!(matches!(e, Error::RankOutOfRange { .. }), "{e}");
    let e = Communicator::init_rank(&ctx, 0, 0, &id, &CommConfig::new()).unwrap_err();
    assert!(matches!(e, Error::RankOutOfRange { .. }), "{e}");
}

#[gpu_test]
fn buffers_and_streams_of_another_context_are_refused() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    // A created context on the same device: its memory and streams are not the
    // communicator's.
    let other = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let foreign = DeviceBuffer::from_slice(&other, &values::<f32>(64, 1)).unwrap();
    let mut recv = DeviceBuffer::<f32>::zeroed(&ctx, 64).unwrap();
    let e = comm
        .all_reduce(
            &foreign.as_view(),
            &mut recv.as_view_mut(),
            ReduceOp::SUM,
            &s,
        )
        .unwrap_err();
    assert!(
        matches!(
            cuda_error(e),
            cuda_driver::Error::ContextMismatch {
                what: "ncclAllReduce",
                ..
            }
        ),
        "a buffer of another context"
    );
    let mut foreign_recv = DeviceBuffer::<f32>::zeroed(&other, 64).unwrap();
    let e = comm
        .all_reduce_in_place(&mut foreign_recv.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::ContextMismatch { .. }
    ));
    let other_stream = stream(&other);
    let e = comm
        .all_reduce_in_place(&mut recv.as_view_mut(), ReduceOp::SUM, &other_stream)
        .unwrap_err();
    assert!(
        matches!(cuda_error(e), cuda_driver::Error::ContextMismatch { .. }),
        "a stream of another context"
    );
    let e = comm.synchronize(&other_stream).unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::ContextMismatch { .. }
    ));
    // A communicator lives in its device's primary context.
    let id = nccl().unique_id().unwrap();
    let e = Communicator::init_rank(&other, 1, 0, &id, &CommConfig::new()).unwrap_err();
    assert!(matches!(e, Error::NotPrimaryContext { .. }), "{e}");
    let e = Communicator::init_all(&[ctx.clone(), ctx.clone()], &CommConfig::new()).unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");
}

#[gpu_test]
fn stream_ordered_memory_is_used_on_its_own_stream_only() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let (home, other) = (stream(&ctx), stream(&ctx));
    // Freed in stream order on `home`: a collective on `other` could still run when the free
    // does, so it is refused.
    let data = values::<f32>(256, 5);
    let mut buf = match DeviceBuffer::<f32>::new_async(&home, 256) {
        Ok(b) => b,
        Err(e) => crate::common::skip(format!("no stream-ordered allocator: {e}")),
    };
    buf.copy_from_host(&data).unwrap();
    let e = comm
        .all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &other)
        .unwrap_err();
    assert!(
        matches!(
            cuda_error(e),
            cuda_driver::Error::StreamMismatch {
                what: "ncclAllReduce",
                ..
            }
        ),
        "stream-ordered memory on another stream"
    );
    let mut recv = DeviceBuffer::<f32>::zeroed(&ctx, 256).unwrap();
    let e = comm
        .all_reduce(
            &buf.as_view(),
            &mut recv.as_view_mut(),
            ReduceOp::SUM,
            &other,
        )
        .unwrap_err();
    assert!(matches!(
        cuda_error(e),
        cuda_driver::Error::StreamMismatch { .. }
    ));
    // On its own stream it works, and the free that follows is ordered after it.
    comm.all_reduce(
        &buf.as_view(),
        &mut recv.as_view_mut(),
        ReduceOp::SUM,
        &home,
    )
    .unwrap();
    drop(buf);
    comm.synchronize(&home).unwrap();
    assert_eq!(recv.to_vec().unwrap(), data);
}

#[gpu_test]
fn a_communicator_used_after_abort_is_refused() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let mut buf = upload(&ctx, &values::<f64>(32, 2));
    comm.abort().unwrap();
    assert!(comm.is_aborted() && comm.as_raw().is_null());
    let e = comm
        .all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Aborted {
                what: "ncclAllReduce"
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "ncclAllReduce: the communicator was aborted; create a new one"
    );
    assert!(matches!(comm.synchronize(&s), Err(Error::Aborted { .. })));
    assert!(matches!(
        comm.check_async_error(),
        Err(Error::Aborted { .. })
    ));
    assert!(matches!(
        comm.split(Some(0), 0, None),
        Err(Error::Aborted { .. })
    ));
    assert!(matches!(comm.abort(), Err(Error::Aborted { .. })));
    {
        let mut group = Group::start().unwrap();
        let e = group
            .all_reduce_in_place(&comm, buf.as_view_mut(), ReduceOp::SUM, &s)
            .unwrap_err();
        assert!(matches!(e, Error::Aborted { .. }), "{e}");
        group.end().unwrap();
    }
    let before = cuda_driver_nccl::drop_error_count();
    assert!(matches!(comm.destroy(), Err(Error::Aborted { .. })));
    assert_eq!(cuda_driver_nccl::drop_error_count(), before);
}

#[gpu_test]
fn operations_outside_an_open_group_and_nested_groups_are_refused() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let data = values::<i64>(128, 3);
    let mut inside = upload(&ctx, &data);
    let mut outside = upload(&ctx, &data);
    let mut group = Group::start().unwrap();
    group
        .all_reduce_in_place(&comm, inside.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    // NCCL would defer these to the group's end, past their borrows: refused.
    let e = comm
        .all_reduce_in_place(&mut outside.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InGroup {
                what: "ncclAllReduce"
            }
        ),
        "{e}"
    );
    assert!(matches!(Group::start(), Err(Error::InGroup { .. })));
    assert!(matches!(comm.abort(), Err(Error::InGroup { .. })));
    assert!(matches!(comm.synchronize(&s), Err(Error::InGroup { .. })));
    assert!(matches!(
        comm.check_async_error(),
        Err(Error::InGroup { .. })
    ));
    let id = UniqueId::new().unwrap();
    assert!(matches!(
        Communicator::init_rank(&ctx, 1, 0, &id, &CommConfig::new()),
        Err(Error::InGroup { .. })
    ));
    group.end().unwrap();
    comm.synchronize(&s).unwrap();
    assert_eq!(inside.to_vec().unwrap(), data);
    assert!(!comm.is_aborted());
}

#[gpu_test]
fn nccl_calls_inside_a_host_function_are_refused() {
    let ctx = gpu(0);
    let comm = Arc::new(Mutex::new(one_rank(&ctx, &CommConfig::new())));
    let s = stream(&ctx);
    let seen = Arc::new(Mutex::new(Vec::new()));
    {
        let (comm, seen) = (comm.clone(), seen.clone());
        s.launch_host_fn(move || {
            let mut out = seen.lock().unwrap();
            out.push(Group::start().map(drop));
            out.push(comm.lock().unwrap().abort());
        })
        .unwrap();
    }
    s.synchronize().unwrap();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.len(), 2);
    for r in seen {
        let e = r.unwrap_err();
        assert!(
            matches!(cuda_error(e), cuda_driver::Error::InHostCallback { .. }),
            "refused in a host function"
        );
    }
    // Refused before anything changed: the communicator is live.
    let comm = comm.lock().unwrap();
    assert!(!comm.is_aborted());
    let mut buf = upload(&ctx, &values::<u8>(16, 1));
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::MAX, &s)
        .unwrap();
    comm.synchronize(&s).unwrap();
}

#[gpu_test]
fn the_caller_s_context_stack_is_left_as_it_was() {
    let ctx = gpu(0);
    let comm = one_rank(&ctx, &CommConfig::new());
    let s = stream(&ctx);
    let mut buf = upload(&ctx, &values::<f32>(1 << 16, 1));
    // A created context on top of the stack: every NCCL call pushes the communicator's
    // primary context and puts the created one back, even where NCCL's runtime switched to a
    // primary context meanwhile.
    let created = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let guard = created.push().unwrap();
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(Context::current_raw().unwrap(), Some(created.as_raw()));
    let id = UniqueId::new().unwrap();
    let other = Communicator::init_rank(&ctx, 1, 0, &id, &CommConfig::new()).unwrap();
    assert_eq!(Context::current_raw().unwrap(), Some(created.as_raw()));
    comm.synchronize(&s).unwrap();
    drop(other);
    assert_eq!(Context::current_raw().unwrap(), Some(created.as_raw()));
    // The communicator's own context on top (nothing pushed, nothing read afterwards): it is
    // still on top after every kind of operation, the created one below it.
    let own = ctx.push().unwrap();
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &s)
        .unwrap();
    assert_eq!(Context::current_raw().unwrap(), Some(ctx.as_raw()));
    let mut out = upload(&ctx, &values::<f32>(1 << 16, 2));
    comm.all_reduce(&buf.as_view(), &mut out.as_view_mut(), ReduceOp::MAX, &s)
        .unwrap();
    comm.broadcast(Some(&buf.as_view()), &mut out.as_view_mut(), 0, &s)
        .unwrap();
    assert_eq!(Context::current_raw().unwrap(), Some(ctx.as_raw()));
    comm.synchronize(&s).unwrap();
    own.pop().unwrap();
    assert_eq!(Context::current_raw().unwrap(), Some(created.as_raw()));
    guard.pop().unwrap();
}
