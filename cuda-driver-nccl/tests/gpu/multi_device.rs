//! One process, two GPUs: `Communicator::init_all` and every collective queued for both
//! devices in one group, each result checked. On one GPU they skip ("1 GPU; this test needs
//! two"), but for the argument checks, which need no second device.

use std::time::Duration;

use cuda_driver::prelude::*;
use cuda_driver::{DeviceBuffer, Stream};
use cuda_driver_nccl::{CommConfig, Communicator, Group, ReduceOp};

use crate::common::{gpu, nccl, stream, two_gpus, upload};

fn value(rank: usize, i: usize) -> f32 {
    ((i % 127) + 100 * (rank + 1)) as f32
}

/// Waits for both devices' streams.
fn sync_all(comms: &[Communicator], streams: &[Stream]) {
    for (c, s) in comms.iter().zip(streams) {
        c.synchronize(s).unwrap();
    }
}

fn every_collective_on_two_devices(config: &CommConfig) {
    let (ctx0, ctx1) = two_gpus();
    nccl();
    let ctxs = vec![ctx0, ctx1];
    let comms = Communicator::init_all(&ctxs, config).unwrap();
    assert_eq!(comms.len(), 2);
    for (r, c) in comms.iter().enumerate() {
        assert_eq!((c.rank(), c.size()), (r, 2));
        assert_eq!(c.device(), ctxs[r].device());
    }
    let streams: Vec<Stream> = ctxs.iter().map(stream).collect();
    let n = 50_000;
    let data: Vec<Vec<f32>> = (0..2)
        .map(|r| (0..n).map(|i| value(r, i)).collect())
        .collect();
    let sum: Vec<f32> = (0..n).map(|i| value(0, i) + value(1, i)).collect();
    let sends: Vec<DeviceBuffer<f32>> = ctxs.iter().zip(&data).map(|(c, d)| upload(c, d)).collect();

    // All-reduce, out of place and in place.
    let mut recvs: Vec<DeviceBuffer<f32>> = ctxs
        .iter()
        .map(|c| DeviceBuffer::zeroed(c, n).unwrap())
        .collect();
    {
        let mut g = Group::start().unwrap();
        for (((c, s), send), recv) in comms.iter().zip(&streams).zip(&sends).zip(&mut recvs) {
            g.all_reduce(c, send.as_view(), recv.as_view_mut(), ReduceOp::SUM, s)
                .unwrap();
        }
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    for r in &recvs {
        assert_eq!(r.to_vec().unwrap(), sum, "all_reduce");
    }
    let mut bufs: Vec<DeviceBuffer<f32>> =
        ctxs.iter().zip(&data).map(|(c, d)| upload(c, d)).collect();
    {
        let mut g = Group::start().unwrap();
        for ((c, s), b) in comms.iter().zip(&streams).zip(&mut bufs) {
            g.all_reduce_in_place(c, b.as_view_mut(), ReduceOp::SUM, s)
                .unwrap();
        }
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    for b in &bufs {
        assert_eq!(b.to_vec().unwrap(), sum, "all_reduce_in_place");
    }

    // Broadcast from rank 1.
    let mut recvs: Vec<DeviceBuffer<f32>> = ctxs
        .iter()
        .map(|c| DeviceBuffer::zeroed(c, n).unwrap())
        .collect();
    {
        let mut g = Group::start().unwrap();
        for (r, ((c, s), recv)) in comms.iter().zip(&streams).zip(&mut recvs).enumerate() {
            let send = (r == 1).then(|| sends[1].as_view());
            g.broadcast(c, send, recv.as_view_mut(), 1, s).unwrap();
        }
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    for r in &recvs {
        assert_eq!(r.to_vec().unwrap(), data[1], "broadcast");
    }

    // Reduce to rank 0 with MAX.
    let mut root_recv = DeviceBuffer::<f32>::zeroed(&ctxs[0], n).unwrap();
    {
        let mut g = Group::start().unwrap();
        g.reduce(
            &comms[0],
            sends[0].as_view(),
            Some(root_recv.as_view_mut()),
            ReduceOp::MAX,
            0,
            &streams[0],
        )
        .unwrap();
        g.reduce(
            &comms[1],
            sends[1].as_view(),
            None,
            ReduceOp::MAX,
            0,
            &streams[1],
        )
        .unwrap();
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    assert_eq!(root_recv.to_vec().unwrap(), data[1], "reduce max");

    // All-gather and reduce-scatter.
    let mut gathered: Vec<DeviceBuffer<f32>> = ctxs
        .iter()
        .map(|c| DeviceBuffer::zeroed(c, 2 * n).unwrap())
        .collect();
    {
        let mut g = Group::start().unwrap();
        for (((c, s), send), recv) in comms.iter().zip(&streams).zip(&sends).zip(&mut gathered) {
            g.all_gather(c, send.as_view(), recv.as_view_mut(), s)
                .unwrap();
        }
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    let all: Vec<f32> = data.concat();
    for b in &gathered {
        assert_eq!(b.to_vec().unwrap(), all, "all_gather");
    }
    let mut parts: Vec<DeviceBuffer<f32>> = ctxs
        .iter()
        .map(|c| DeviceBuffer::zeroed(c, n / 2).unwrap())
        .collect();
    let halves: Vec<DeviceBuffer<f32>> =
        ctxs.iter().zip(&data).map(|(c, d)| upload(c, d)).collect();
    {
        let mut g = Group::start().unwrap();
        for (((c, s), send), recv) in comms.iter().zip(&streams).zip(&halves).zip(&mut parts) {
            g.reduce_scatter(c, send.as_view(), recv.as_view_mut(), ReduceOp::SUM, s)
                .unwrap();
        }
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    for (r, p) in parts.iter().enumerate() {
        assert_eq!(
            p.to_vec().unwrap(),
            sum[r * n / 2..(r + 1) * n / 2],
            "reduce_scatter"
        );
    }

    // Send/receive between the devices: 0 -> 1 and 1 -> 0 at once.
    let mut got: Vec<DeviceBuffer<f32>> = ctxs
        .iter()
        .map(|c| DeviceBuffer::zeroed(c, n).unwrap())
        .collect();
    {
        let mut g = Group::start().unwrap();
        for (r, (((c, s), send), recv)) in comms
            .iter()
            .zip(&streams)
            .zip(&sends)
            .zip(&mut got)
            .enumerate()
        {
            g.send(c, send.as_view(), 1 - r, s).unwrap();
            g.recv(c, recv.as_view_mut(), 1 - r, s).unwrap();
        }
        g.end().unwrap();
    }
    sync_all(&comms, &streams);
    assert_eq!(got[0].to_vec().unwrap(), data[1], "recv on device 0");
    assert_eq!(got[1].to_vec().unwrap(), data[0], "recv on device 1");

    // Outside a group, a collective of one device alone would wait for the other forever:
    // NCCL needs them together; the crate leaves that rule to NCCL (it is not a soundness
    // matter). Done: finalized together, in one group.
    Communicator::finalize_all(comms).unwrap();
}

#[gpu_test]
fn communicators_of_one_process_can_be_dropped_one_after_the_other() {
    for config in [
        CommConfig::new(),
        CommConfig::new().timeout(Duration::from_secs(60)),
    ] {
        let (ctx0, ctx1) = two_gpus();
        nccl();
        let before = cuda_driver_nccl::drop_error_count();
        let comms = Communicator::init_all(&[ctx0, ctx1], &config).unwrap();
        // NCCL frees the communicators of one process when the last one goes.
        for c in comms {
            drop(c);
        }
        assert_eq!(cuda_driver_nccl::drop_error_count(), before);
    }
}

#[gpu_test]
fn two_devices_of_one_process_run_every_collective_in_groups() {
    every_collective_on_two_devices(&CommConfig::new());
}

#[gpu_test]
fn two_devices_with_a_timeout_run_every_collective_in_groups() {
    every_collective_on_two_devices(&CommConfig::new().timeout(Duration::from_secs(60)));
}

#[gpu_test]
fn init_all_checks_its_contexts_before_nccl() {
    let ctx = gpu(0);
    nccl();
    let e = Communicator::init_all(&[], &CommConfig::new()).unwrap_err();
    assert!(e.to_string().contains("no context"), "{e}");
    let e = Communicator::init_all(&[ctx.clone(), ctx], &CommConfig::new()).unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");
}
