//! The benchmark's NCCL rows: an all-reduce (f32, sum) of 4 KiB, 1 MiB and 256 MiB on a
//! communicator of one rank, through `cuda_driver_nccl` against the raw `ncclAllReduce` of the
//! same library, communicator, stream and buffers. Skipped, with the reason printed, when NCCL
//! cannot be loaded.

use std::ffi::c_void;

use cuda_driver_nccl::{sys as nccl_sys, CommConfig, Communicator, Nccl, ReduceOp, UniqueId};

use super::*;

/// The sweep the rows belong to.
const SWEEP: &str = "all-reduce, 1 rank";

/// The rows; `Ok(None)` when NCCL could not be loaded (the reason is printed), else the
/// library that ran them.
pub fn all_reduce(
    r: &mut Runner,
    cfg: &Config,
    ctx: &Context,
    stream: &Stream,
) -> Res<Option<String>> {
    let nccl = match Nccl::get() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("bench: the NCCL rows are skipped: {e}");
            return Ok(None);
        }
    };
    let raw_all_reduce = nccl
        .functions()
        .ncclAllReduce
        .ok_or_else(|| Failure::Usage("the loaded NCCL exports no ncclAllReduce".into()))?;
    let id = UniqueId::new()?;
    let comm = Communicator::init_rank(ctx, 1, 0, &id, &CommConfig::new())?;
    // The raw side's calls act on the current context: NCCL's runtime may have switched it.
    ctx.set_current()?;
    let sizes: &[(usize, usize)] = if cfg.quick {
        &[(4 * KIB, 200), (MIB, 100), (16 * MIB, 4)]
    } else {
        &[(4 * KIB, BATCH), (MIB, BATCH), (256 * MIB, 8)]
    };
    let max = sizes.iter().map(|s| s.0).max().unwrap_or(0) / 4;
    let mut rng = XorShift::new(17);
    let data = random_f32(&mut rng, max);
    let send = upload(ctx, &data)?;
    let mut recv = DeviceBuffer::<f32>::new(ctx, max)?;
    // The upload may still be in flight on the legacy stream, which `stream` does not wait for.
    ctx_sync()?;
    let st = stream.as_raw();
    let sync = || -> Res<()> {
        // SAFETY: `st` is a live stream of the current context.
        unsafe { raw!(cuStreamSynchronize(st)) };
        Ok(())
    };
    for &(bytes, reps) in sizes {
        let n = bytes / 4;
        let small = bytes <= MIB;
        let (unit, higher) = if small {
            ("us/all-reduce", false)
        } else {
            ("GB/s", true)
        };
        let row = Row::new(
            format!("ncclAllReduce f32 sum, 1 rank, {}", size_name(bytes)),
            unit,
            higher,
            Some(1.02),
        )
        .sized(SWEEP, bytes);
        let (s, d) = (send.as_raw(), recv.as_raw());
        r.measure(row, TWO, |who, full| {
            fill_words(&recv, 0)?;
            let t = match who {
                Who::Raw => time_loop(reps, sync, || {
                    // SAFETY: both buffers hold at least `n` floats of the current context;
                    // the communicator and the stream are live.
                    let code = unsafe {
                        raw_all_reduce(
                            s as usize as *const c_void,
                            d as usize as *mut c_void,
                            n,
                            nccl_sys::ncclFloat32,
                            nccl_sys::ncclSum,
                            comm.as_raw(),
                            st,
                        )
                    };
                    if code != nccl_sys::ncclSuccess {
                        return Err(Failure::Usage(format!(
                            "ncclAllReduce failed: {}",
                            cuda_driver_nccl::NcclResult::from_raw(code)
                        )));
                    }
                    Ok(())
                })?,
                // Safe: the views made once, outside the loop; each all-reduce = the checks
                // (communicator, group, stream and views' contexts, lengths) + cuCtxGetCurrent
                // + ncclAllReduce (the communicator's context was current: nothing to restore).
                _ => {
                    let src = send.as_view().slice(..n)?;
                    let mut dst = recv.as_view_mut().into_slice_mut(..n)?;
                    time_loop(reps, sync, || {
                        Ok(comm.all_reduce(&src, &mut dst, ReduceOp::SUM, stream)?)
                    })?
                }
            };
            // One rank: the result is the input.
            let mut got = vec![0f32; n];
            recv.as_view().slice(..n)?.copy_to_host(&mut got)?;
            let checked = if full { n } else { n.min(1024) };
            check!(
                got[..checked] == data[..checked] && got[n - 1] == data[n - 1],
                "{}: the all-reduce of one rank did not copy its input",
                size_name(bytes)
            );
            Ok(if small {
                secs(t) * 1e6 / reps as f64
            } else {
                (bytes * reps) as f64 / secs(t) / 1e9
            })
        })?;
    }
    comm.destroy()?;
    ctx.set_current()?;
    Ok(Some(format!("NCCL {} ({})", nccl.version(), nccl.path())))
}
