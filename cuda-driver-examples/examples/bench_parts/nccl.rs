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
    let (s_raw, d_raw) = (send.as_raw(), recv.as_raw());
    // One raw all-reduce of `n` floats, after a cuCtxGetCurrent when `ctx_check` (the floor).
    let raw_one = |n: usize, ctx_check: bool| -> Res<()> {
        if ctx_check {
            let mut c = null_mut();
            // SAFETY: writes one CUcontext.
            unsafe { raw!(cuCtxGetCurrent(&mut c)) };
            std::hint::black_box(c);
        }
        // SAFETY: both buffers hold at least `n` floats of the current context; the
        // communicator and the stream are live.
        let code = unsafe {
            raw_all_reduce(
                s_raw as usize as *const c_void,
                d_raw as usize as *mut c_void,
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
    };
    // One rank: the result is the input.
    let check_result = |recv: &DeviceBuffer<f32>, n: usize, full: bool| -> Res<()> {
        let mut got = vec![0f32; n];
        recv.as_view().slice(..n)?.copy_to_host(&mut got)?;
        let checked = if full { n } else { n.min(1024) };
        check!(
            got[..checked] == data[..checked] && got[n - 1] == data[n - 1],
            "{}: the all-reduce of one rank did not copy its input",
            size_name(n * 4)
        );
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
        let value = |t: Duration| {
            if small {
                secs(t) * 1e6 / reps as f64
            } else {
                (bytes * reps) as f64 / secs(t) / 1e9
            }
        };
        let name = format!("ncclAllReduce f32 sum, 1 rank, {}", size_name(bytes));
        // Small all-reduces are host-bound (about 5 us of NCCL's enqueue), and the safe one
        // must read the current context (NCCL switches devices with cudaSetDevice, which
        // would replace a caller's context: see cuda-driver-nccl's scope.rs): raw plus that
        // cuCtxGetCurrent is their floor, the second row, which they are judged against. A
        // large one is judged against raw.
        /// What one side of a row runs.
        #[derive(Clone, Copy)]
        enum Side {
            Raw,
            RawAfterContextCheck,
            Safe,
        }
        let mut rows = vec![(
            name.clone(),
            if small { None } else { Some(1.02) },
            Side::Raw,
            Side::Safe,
        )];
        if small {
            // Against the floor: the raw all-reduce after one cuCtxGetCurrent (raw column)
            // against ours, same rounds. Then what that call alone costs: raw against raw
            // after cuCtxGetCurrent (ours column), no target.
            rows.push((
                format!("{name} vs its floor: raw after cuCtxGetCurrent (raw column)"),
                Some(1.02),
                Side::RawAfterContextCheck,
                Side::Safe,
            ));
            rows.push((
                format!("{name}: raw, and raw after cuCtxGetCurrent (ours column)"),
                None,
                Side::Raw,
                Side::RawAfterContextCheck,
            ));
        }
        for (label, target, raw_side, our_side) in rows {
            let row = Row::new(label, unit, higher, target).sized(SWEEP, bytes);
            r.measure(row, TWO, |who, full| {
                fill_words(&recv, 0)?;
                let side = if who == Who::Raw { raw_side } else { our_side };
                let t = match side {
                    Side::Raw => time_loop(reps, sync, || raw_one(n, false))?,
                    Side::RawAfterContextCheck => time_loop(reps, sync, || raw_one(n, true))?,
                    // Safe: the views made once, outside the loop; each all-reduce = the
                    // checks (communicator, group, stream and views' contexts, lengths) +
                    // cuCtxGetCurrent + ncclAllReduce (the communicator's context was current:
                    // nothing to restore).
                    Side::Safe => {
                        let src = send.as_view().slice(..n)?;
                        let mut dst = recv.as_view_mut().into_slice_mut(..n)?;
                        time_loop(reps, sync, || {
                            Ok(comm.all_reduce(&src, &mut dst, ReduceOp::SUM, stream)?)
                        })?
                    }
                };
                check_result(&recv, n, full)?;
                Ok(value(t))
            })?;
        }
    }
    comm.destroy()?;
    ctx.set_current()?;
    Ok(Some(format!("NCCL {} ({})", nccl.version(), nccl.path())))
}
