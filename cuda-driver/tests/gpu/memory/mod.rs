//! GPU tests: memory (Memory Management), by kind:
//!
//! * `device`: device buffers and their views, allocation failures, threads and contexts;
//! * `host`: page-locked memory and host registrations;
//! * `managed`: managed memory and host access to it;
//! * `copy`: copies and memsets (blocking and asynchronous, 2D and 3D, between contexts,
//!   batched), and what they refuse;
//! * `array`: CUDA arrays and mipmapped arrays;
//! * `ipc`: memory and events shared with another process (legacy IPC), the crate's IPC
//!   socket;
//! * `shared_host`: page-locked memory shared with host functions and graph host nodes.
//!
//! Here: every kind dropped without errors. Elsewhere: virtual memory (`vmm`), the
//! stream-ordered allocator (`pool`), unified addressing (`unified`), peer access (`peer`).
//!
//! Every copy is checked with non-zero, position-dependent data. Managed allocations stay
//! tiny (KBs).

use std::sync::mpsc;
use std::time::Duration;

use cuda_driver::{
    error::drop_error_count, memory::pool::MemPool, memory::ManagedBuffer, types::AttachFlags,
    types::PinnedFlags, types::StreamFlags, DeviceBuffer, PinnedBuffer, Stream,
};

use crate::common::xorshift32;

mod array;
mod copy;
mod device;
mod host;
#[cfg(unix)]
mod ipc;
mod managed;
mod notification;
mod shared_host;

/// Position-dependent, non-zero pseudo-random words (xorshift32), different per `seed`.
pub(crate) fn words(n: usize, seed: u32) -> Vec<u32> {
    xorshift32(n, seed).map(|x| x | 1).collect()
}

/// Non-zero floats, different per `seed`.
pub(crate) fn floats(n: usize, seed: u32) -> Vec<f32> {
    words(n, seed)
        .into_iter()
        .map(|w| (w % 100_000) as f32 * 0.25 + 1.0)
        .collect()
}

#[gpu_test]
fn every_kind_of_memory_drops_without_errors() {
    let ctx = gpu_exclusive_or_skip!();
    let before = drop_error_count();
    let stream = Stream::new(&ctx, StreamFlags::DEFAULT).unwrap();
    let pool = MemPool::new(ctx.device()).unwrap();
    let a = pool.alloc_async::<u8>(&stream, 1000).unwrap();
    let b = DeviceBuffer::<u8>::new_async(&stream, 1000).unwrap();
    let c = PinnedBuffer::<u8>::zeroed(&ctx, 1000, PinnedFlags::empty()).unwrap();
    let d = ManagedBuffer::<u8>::zeroed(&stream, 1000, AttachFlags::GLOBAL).unwrap();
    drop((a, b, c, d));
    drop(pool);
    stream.synchronize().unwrap();
    drop(stream);
    assert_eq!(drop_error_count(), before);
}

/// Blocks `stream` with a host function until the returned sender is dropped (or used): work
/// queued after it stays pending until then. Dropping the sender on a panic unblocks it too,
/// and the host function gives up after 10 s, so that a test whose expectation is wrong (a
/// call that waits for the blocked work) fails instead of hanging.
fn block(stream: &Stream) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    stream
        .launch_host_fn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    tx
}
