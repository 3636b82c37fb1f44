//! GPU tests: checkpointing a child process (CUDA Checkpointing): lock, checkpoint, restore,
//! unlock, and the child's device data survives.

use cuda_driver::prelude::*;
use cuda_driver::{
    checkpoint::checkpoint_checkpoint, checkpoint::checkpoint_lock, checkpoint::checkpoint_restore,
    checkpoint::checkpoint_restore_thread_id, checkpoint::checkpoint_state,
    checkpoint::checkpoint_unlock, types::ErrorCode, types::ProcessState, DeviceBuffer, Error,
};

use crate::child::{child_role, spawn_child};
use crate::common::{note, skip};

const CHECKPOINT_ROLE: &str = "checkpoint-child";

#[gpu_test]
fn checkpoint_a_child_process_and_its_data_survives() {
    if let Some(mut chan) = child_role(CHECKPOINT_ROLE) {
        // The child: device data, then wait while the parent checkpoints and restores it.
        let ctx = gpu_or_skip!();
        let data: Vec<u32> = crate::common::xorshift32(1 << 16, 77).collect();
        let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
        ctx.synchronize().unwrap();
        chan.send_u64(std::process::id() as u64).unwrap();
        let go = chan.recv().unwrap();
        if go == b"skip" {
            return;
        }
        assert_eq!(go, b"check");
        assert_eq!(buf.to_vec().unwrap(), data, "device data after restore");
        let mut more = DeviceBuffer::<u32>::zeroed(&ctx, 1024).unwrap();
        more.memset(9u32).unwrap();
        assert!(more.to_vec().unwrap().iter().all(|&v| v == 9));
        chan.send(b"ok").unwrap();
        return;
    }
    let _ctx = gpu_or_skip!();
    // This process: running, and it names its restore thread.
    let me = std::process::id() as i32;
    match checkpoint_state(me) {
        Err(e @ Error::Unsupported { .. }) => skip(format!("checkpointing needs CUDA 12.8: {e}")),
        Ok(s) => assert_eq!(s, ProcessState::RUNNING),
        Err(e) => note(format!("checkpoint state of this process: {e}")),
    }
    match checkpoint_restore_thread_id(me) {
        Ok(tid) => assert!(tid > 0, "{tid}"),
        Err(e) => note(format!("restore thread id of this process: {e}")),
    }
    // A process that does not exist: an error.
    assert!(checkpoint_state(i32::MAX).is_err());

    let (mut child, mut chan) = spawn_child(CHECKPOINT_ROLE);
    let r = chan.recv_u64();
    let pid = child.check(r, "the child's pid") as i32;
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::RUNNING);
    let tid = checkpoint_restore_thread_id(pid).unwrap();
    assert!(tid > 0, "restore thread id {tid}");
    if let Err(e) = checkpoint_lock(pid, 30_000) {
        if matches!(
            e.code(),
            Some(ErrorCode::NOT_SUPPORTED | ErrorCode::NOT_PERMITTED)
        ) {
            let r = chan.send(b"skip");
            child.check(r, "tell the child to stop");
            child.finish();
            skip(format!("the driver refuses to checkpoint here: {e}"));
        }
        panic!("cuCheckpointProcessLock: {e}");
    }
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::LOCKED);
    checkpoint_checkpoint(pid).unwrap();
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::CHECKPOINTED);
    checkpoint_restore(pid).unwrap();
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::LOCKED);
    checkpoint_unlock(pid).unwrap();
    assert_eq!(checkpoint_state(pid).unwrap(), ProcessState::RUNNING);
    let r = chan.send(b"check");
    child.check(r, "tell the child to check");
    let r = chan.recv();
    let ok = child.check(r, "the child's verdict");
    assert_eq!(ok, b"ok");
    child.finish();
}
