//! CUDA checkpointing of a process (CUDA 12.8+, resolved at run time): lock a process's CUDA
//! work, move its device state to host memory (checkpoint), bring it back (restore), unlock.
//! With CRIU or a similar tool this checkpoints a whole process. Every call names the
//! process by pid; the driver refuses the calling process for some steps.

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::Result;
use crate::init;

use crate::types::ProcessState;

/// The CUDA checkpoint state of process `pid` (running, locked, checkpointed, failed).
#[wraps(cuCheckpointProcessGetState)]
#[track_caller]
pub fn checkpoint_state(pid: i32) -> Result<ProcessState> {
    init()?;
    let mut s = 0;
    // SAFETY: writes one CUprocessState.
    call!(unsafe { newer::cuCheckpointProcessGetState()?(pid, &mut s) })?;
    Ok(ProcessState(s))
}

/// The id of the thread of `pid` that performs restores.
#[wraps(cuCheckpointProcessGetRestoreThreadId)]
#[track_caller]
pub fn checkpoint_restore_thread_id(pid: i32) -> Result<i32> {
    init()?;
    let mut tid = 0;
    call!(
        // SAFETY: writes one int.
        unsafe { newer::cuCheckpointProcessGetRestoreThreadId()?(pid, &mut tid) },
    )?;
    Ok(tid)
}

/// Locks `pid`'s CUDA calls, waiting up to `timeout_ms` (0: forever) for running work.
#[wraps(cuCheckpointProcessLock)]
#[track_caller]
pub fn checkpoint_lock(pid: i32, timeout_ms: u32) -> Result<()> {
    init()?;
    // SAFETY: all-zero is the documented default of the reserved fields.
    let mut args: sys::CUcheckpointLockArgs = unsafe { std::mem::zeroed() };
    args.timeoutMs = timeout_ms;
    // SAFETY: `args` lives across the call.
    call!(unsafe { newer::cuCheckpointProcessLock()?(pid, &mut args) })
}

/// Checkpoints a locked process: its device memory moves to host memory.
#[wraps(cuCheckpointProcessCheckpoint)]
#[track_caller]
pub fn checkpoint_checkpoint(pid: i32) -> Result<()> {
    init()?;
    // SAFETY: reserved fields must be zero.
    let mut args: sys::CUcheckpointCheckpointArgs = unsafe { std::mem::zeroed() };
    call!(
        // SAFETY: `args` lives across the call.
        unsafe { newer::cuCheckpointProcessCheckpoint()?(pid, &mut args) },
    )
}

/// Restores a checkpointed process onto the same GPUs (the process stays locked).
#[wraps(cuCheckpointProcessRestore)]
#[track_caller]
pub fn checkpoint_restore(pid: i32) -> Result<()> {
    init()?;
    // SAFETY: reserved fields zero, no GPU remapping (null pairs, count 0).
    let mut args: sys::CUcheckpointRestoreArgs = unsafe { std::mem::zeroed() };
    // SAFETY: `args` lives across the call.
    call!(unsafe { newer::cuCheckpointProcessRestore()?(pid, &mut args) })
}

/// Unlocks a locked (or restored) process.
#[wraps(cuCheckpointProcessUnlock)]
#[track_caller]
pub fn checkpoint_unlock(pid: i32) -> Result<()> {
    init()?;
    // SAFETY: reserved fields must be zero.
    let mut args: sys::CUcheckpointUnlockArgs = unsafe { std::mem::zeroed() };
    // SAFETY: `args` lives across the call.
    call!(unsafe { newer::cuCheckpointProcessUnlock()?(pid, &mut args) })
}
