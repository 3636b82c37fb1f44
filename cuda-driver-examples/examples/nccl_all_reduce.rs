//! An all-reduce across processes, one per GPU, through NCCL (`cuda-driver-nccl`): the same
//! program on one host or on several.
//!
//! Under a launcher each process is one rank; it finds its rank, the world size and rank 0's
//! address in the launcher's variables (see `cuda_driver_nccl::rendezvous`):
//!
//! ```text
//! # one host, 8 GPUs:
//! torchrun --nproc-per-node 8 --no-python target/release/examples/nccl_all_reduce
//! # two hosts (run on each, --node-rank 0 and 1):
//! torchrun --nnodes 2 --nproc-per-node 8 --node-rank 0 --master-addr host0 \
//!     --master-port 29500 --no-python target/release/examples/nccl_all_reduce
//! mpirun -np 16 -H host0:8,host1:8 -x MASTER_ADDR=host0 target/release/examples/nccl_all_reduce
//! ```
//!
//! Started without a launcher it is its own: it starts `--ranks N` copies of itself (default:
//! one per GPU of this host) with the variables torchrun would set, on the loopback address,
//! and waits for them.
//!
//! Each rank fills a buffer with `rank + 1`, all-reduces it (sum) and checks that every
//! element is `1 + 2 + ... + world`; then it times a few all-reduces and prints the bus
//! bandwidth. A peer that dies makes the others fail within `--timeout` seconds instead of
//! hanging. `NCCL_NVLS_ENABLE=0` is set for every rank: NVLink multicast stays off on shared
//! GPU hosts, where a multicast call gone wrong can put the GPUs out of service.
//!
//! Run: `cargo run --release -p cuda-driver-examples --example nccl_all_reduce -- [--ranks N]
//! [--elements N] [--timeout SECS]`

use std::net::TcpListener;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use cuda_driver::prelude::*;
use cuda_driver::{types::StreamFlags, Device, DeviceBuffer, Stream};
use cuda_driver_nccl::rendezvous::{exchange_unique_id, RankEnv};
use cuda_driver_nccl::{CommConfig, Communicator, ReduceOp, NVLS_VAR};

struct Args {
    ranks: Option<usize>,
    elements: usize,
    timeout: Duration,
}

const USAGE: &str = "usage: nccl_all_reduce [--ranks N] [--elements N] [--timeout SECS]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        ranks: None,
        elements: 1 << 24,
        timeout: Duration::from_secs(120),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |what: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|&n: &usize| n > 0)
                .ok_or_else(|| format!("{what} needs a positive number\n{USAGE}"))
        };
        match a.as_str() {
            "--ranks" => args.ranks = Some(number("--ranks")?),
            "--elements" => args.elements = number("--elements")?,
            "--timeout" => args.timeout = Duration::from_secs(number("--timeout")? as u64),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    // Before any thread starts (the crate would set it too, before loading NCCL).
    std::env::set_var(NVLS_VAR, "0");
    let result = parse_args().and_then(|args| match RankEnv::from_env() {
        Ok(Some(env)) => {
            if args.ranks.is_some() {
                return Err("--ranks is for a start without a launcher; the launcher's \
                            variables are set"
                    .into());
            }
            rank(&env, &args).map_err(|e| format!("rank {}: {e}", env.rank))
        }
        Ok(None) => launch(&args),
        Err(e) => Err(e.to_string()),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nccl_all_reduce: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Starts one copy of this program per rank on this host, as torchrun would, and waits.
fn launch(args: &Args) -> Result<(), String> {
    let gpus = Device::count().map_err(|e| e.to_string())?;
    let world = args.ranks.unwrap_or(gpus);
    if world == 0 || gpus == 0 {
        return Err("no GPU".into());
    }
    if world > gpus {
        return Err(format!(
            "--ranks {world}: this host has {gpus} GPU(s), and NCCL needs one GPU per rank"
        ));
    }
    // A free port for rank 0 (released here, bound again by rank 0 at once).
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free loopback port: {e}"))?
        .port();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    println!("starting {world} rank(s) on this host (rank 0 on 127.0.0.1:{port})");
    let mut children = Vec::new();
    for rank in 0..world {
        let child = Command::new(&exe)
            .args(["--elements", &args.elements.to_string()])
            .args(["--timeout", &args.timeout.as_secs().to_string()])
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", world.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env(NVLS_VAR, "0")
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start rank {rank}: {e}"))?;
        children.push((rank, child));
    }
    // Every rank's own waits are bounded by the timeout; this bounds the whole.
    let deadline = Instant::now() + args.timeout * 3;
    let mut failed = Vec::new();
    for (rank, mut child) in children {
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        match status {
            Some(s) if s.success() => {}
            Some(s) => failed.push(format!("rank {rank} ({s})")),
            None => failed.push(format!(
                "rank {rank} (stopped after {:?})",
                args.timeout * 3
            )),
        }
    }
    if failed.is_empty() {
        println!("all {world} rank(s) passed");
        Ok(())
    } else {
        Err(format!("failed: {}", failed.join(", ")))
    }
}

/// One rank: meet the others, all-reduce, check, time.
fn rank(env: &RankEnv, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::get(env.device_ordinal(Device::count()?))?;
    let ctx = dev.primary_context()?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let id = exchange_unique_id(env, args.timeout)?;
    let config = CommConfig::new().timeout(args.timeout);
    let comm = Communicator::init_rank(&ctx, env.world_size, env.rank, &id, &config)?;

    let n = args.elements;
    let mut buf = DeviceBuffer::from_slice(&ctx, &vec![(env.rank + 1) as f32; n])?;
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &stream)?;
    comm.synchronize(&stream)?;
    let want = (env.world_size * (env.world_size + 1) / 2) as f32;
    let got = buf.to_vec()?;
    if let Some(i) = got.iter().position(|&x| x != want) {
        return Err(format!("element {i} is {}, expected {want}", got[i]).into());
    }

    // Bus bandwidth as nccl-tests reports it: size / time * 2 (n - 1) / n (0 for one rank;
    // the algorithm bandwidth, size / time, is printed beside it). One all-reduce first lines
    // the ranks up (each checked its result on the host for its own time): it completes only
    // once every rank has joined, so the clocks start together.
    comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &stream)?;
    comm.synchronize(&stream)?;
    let iters = 10;
    let start = Instant::now();
    for _ in 0..iters {
        comm.all_reduce_in_place(&mut buf.as_view_mut(), ReduceOp::SUM, &stream)?;
    }
    comm.synchronize(&stream)?;
    let per = start.elapsed().as_secs_f64() / iters as f64;
    let bytes = (n * 4) as f64;
    let world = env.world_size as f64;
    let bus = bytes / per * 2.0 * (world - 1.0) / world / 1e9;
    println!(
        "rank {}/{} on GPU {} ({:?} launcher): all-reduce of {:.1} MiB correct; {:.3} ms, algorithm bandwidth {:.1} GB/s, bus bandwidth {:.1} GB/s",
        env.rank,
        env.world_size,
        dev.as_raw(),
        env.launcher,
        bytes / (1 << 20) as f64,
        per * 1e3,
        bytes / per / 1e9,
        bus
    );
    comm.finalize()?;
    Ok(())
}
