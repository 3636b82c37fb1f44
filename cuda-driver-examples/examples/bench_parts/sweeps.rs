//! The benchmark's sweeps (launches by parameter count, copies and allocations by size,
//! loading of a small and a large PTX), each point a row, with raw, ours and, where it has
//! the operation, cudarc on one stream and on two.

use std::sync::Arc;

use cuda_driver::{
    launch::KernelArg, launch::KernelArgs, launch::ParamBuffer, DeviceSliceMut, Function, Library,
};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig as CudarcConfig,
    PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use super::*;

/// The cudarc version the examples crate pins (`=` in its Cargo.toml).
pub const CUDARC_VERSION: &str = "0.19.10";

/// cudarc's side: two handles of the device's primary context, one used with its default
/// stream only, the other with two streams it created.
pub struct Cudarc {
    /// One-stream mode: no stream created, so no event tracking.
    pub one: Arc<CudaContext>,
    /// Its default stream (the legacy stream).
    pub s1: Arc<CudaStream>,
    /// Multi-stream mode.
    pub two: Arc<CudaContext>,
    /// The first of its two streams: where the work goes.
    pub s2: Arc<CudaStream>,
    /// The second stream, created so that there are two.
    _s2b: Arc<CudaStream>,
}

impl Cudarc {
    pub fn new() -> Res<Cudarc> {
        let one = CudaContext::new(0)?;
        let s1 = one.default_stream();
        let two = CudaContext::new(0)?;
        let s2 = two.new_stream()?;
        let s2b = two.new_stream()?;
        check!(
            !one.is_in_multi_stream_mode() && two.is_managing_stream_synchronization(),
            "cudarc's stream modes are not as expected"
        );
        Ok(Cudarc {
            one,
            s1,
            two,
            s2,
            _s2b: s2b,
        })
    }

    /// The stream of a cudarc side.
    fn stream(&self, who: Who) -> &Arc<CudaStream> {
        if who == Who::Cudarc {
            &self.s1
        } else {
            &self.s2
        }
    }

    /// The context handle of a cudarc side.
    fn ctx(&self, who: Who) -> &Arc<CudaContext> {
        if who == Who::Cudarc {
            &self.one
        } else {
            &self.two
        }
    }
}

/// The address of a cudarc buffer, for the untimed checks (read and written with raw calls
/// after its stream is synchronized).
fn cptr<T>(buf: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _record) = buf.device_ptr(stream);
    p
}

/// A PTX text without its trailing NUL (cudarc's `Ptx::from_src` makes a `CString` of it).
fn ptx_text(ptx: &'static str) -> &'static str {
    ptx.strip_suffix('\0').unwrap_or(ptx)
}

fn synchronize(stream: &CudaStream) -> Res<()> {
    Ok(stream.synchronize()?)
}

// ---------------------------------------------------------------------------------------
// Launches by parameter count
// ---------------------------------------------------------------------------------------

/// The kernels of the launch sweep, by parameter count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kern {
    Empty,
    Args1,
    Add4,
    Args16,
    Args64,
}

impl Kern {
    const ALL: [Kern; 5] = [
        Kern::Empty,
        Kern::Args1,
        Kern::Add4,
        Kern::Args16,
        Kern::Args64,
    ];

    fn args(self) -> u32 {
        match self {
            Kern::Empty => 0,
            Kern::Args1 => 1,
            Kern::Add4 => 4,
            Kern::Args16 => 16,
            Kern::Args64 => 64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kern::Empty => "empty()",
            Kern::Args1 => "args1(out)",
            Kern::Add4 => "add4(a, b, c, n)",
            Kern::Args16 => "args16(out, 15 x u32)",
            Kern::Args64 => "args64(out, 63 x u32)",
        }
    }

    /// What `out[0]` holds after `count` launches from 0 (args1 adds 1 each time, args16
    /// and args64 store the sum of their values 1, 2, ...).
    fn expected(self, count: usize) -> u32 {
        match self {
            Kern::Args1 => count as u32,
            Kern::Args16 => (1..=15).sum(),
            Kern::Args64 => (1..=63).sum(),
            Kern::Empty | Kern::Add4 => 0,
        }
    }
}

/// The arguments of args16 and args64 through the safe API: the tuples of
/// [`KernelArgs`] stop at 12, so a program with more parameters implements the trait for its
/// own type, here the out pointer and an array of values.
macro_rules! many_args {
    ($name:ident, $m:literal) => {
        struct $name<'a> {
            out: DeviceSliceMut<'a, u32>,
            vals: &'a [u32; $m],
        }

        // SAFETY: pointer 0 is the view's parameter pointer (8 bytes, SIZES[0]); pointer
        // i + 1 points to vals[i] (4 bytes, SIZES[i + 1]); both are borrowed for as long as
        // `self` is, and there are $m + 1 of each.
        unsafe impl KernelArgs for $name<'_> {
            const SIZES: &'static [usize] = &{
                let mut s = [4usize; $m + 1];
                s[0] = 8;
                s
            };
            type Pointers = [*mut c_void; $m + 1];
            #[inline(always)]
            fn pointers(&self) -> [*mut c_void; $m + 1] {
                let mut p = [null_mut(); $m + 1];
                p[0] = self.out.param_ptr();
                for (slot, v) in p[1..].iter_mut().zip(self.vals) {
                    *slot = KernelArg::param_ptr(&v);
                }
                p
            }
        }
    };
}
many_args!(Args16, 15);
many_args!(Args64, 63);

/// The raw side's argument storage: a C program's locals, at addresses that do not move.
struct RawArgs {
    out: sys::CUdeviceptr,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    c: sys::CUdeviceptr,
    n: c_int,
    vals: [u32; 63],
}

/// One side's kernels in cudarc.
struct CudarcKernels {
    empty: CudaFunction,
    args1: CudaFunction,
    add4: CudaFunction,
    args16: CudaFunction,
    args64: CudaFunction,
    out: CudaSlice<u32>,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: CudaSlice<f32>,
}

impl CudarcKernels {
    fn new(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, add4: &Add4) -> Res<Self> {
        let m = ctx.load_module(Ptx::from_src(ptx_text(ptx::BENCH)))?;
        let ma = ctx.load_module(Ptx::from_src(ptx_text(ptx::BENCH_ARGS)))?;
        let mut ha = vec![0.0f32; ADD4_N];
        let mut hb = vec![0.0f32; ADD4_N];
        read_back(&add4.a, 0, &mut ha)?;
        read_back(&add4.b, 0, &mut hb)?;
        let k = CudarcKernels {
            empty: m.load_function("empty")?,
            args1: m.load_function("args1")?,
            add4: m.load_function("add4")?,
            args16: ma.load_function("args16")?,
            args64: ma.load_function("args64")?,
            out: stream.alloc_zeros::<u32>(1)?,
            a: stream.clone_htod(&ha)?,
            b: stream.clone_htod(&hb)?,
            c: stream.alloc_zeros::<f32>(ADD4_N)?,
        };
        stream.synchronize()?;
        Ok(k)
    }

    /// Launches `k` `count` times on `stream` through the builder, as cudarc's users do:
    /// `launch_builder(&f)`, one `arg` per parameter, `launch(cfg)`.
    fn enqueue(
        &mut self,
        k: Kern,
        stream: &CudaStream,
        count: usize,
        vals: &[u32; 63],
    ) -> Res<f64> {
        let s = stream.cu_stream().cast();
        let one = CudarcConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let add4_cfg = CudarcConfig {
            grid_dim: (grid(ADD4_N), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let n = ADD4_N as c_int;
        // SAFETY (every launch below): the arguments are the kernel's parameters (out: one
        // u32; a, b, c: ADD4_N floats, the grid covering ADD4_N threads and the kernel
        // skipping i >= n; the values are u32); the buffers outlive the stream's work, which
        // is synchronized before the host reads them.
        match k {
            Kern::Empty => enqueue_ns(count, s, || {
                // SAFETY: as above.
                unsafe { stream.launch_builder(&self.empty).launch(one)? };
                Ok(())
            }),
            Kern::Args1 => {
                let (f, out) = (&self.args1, &mut self.out);
                enqueue_ns(count, s, || {
                    let mut b = stream.launch_builder(f);
                    b.arg(&mut *out);
                    // SAFETY: as above.
                    unsafe { b.launch(one)? };
                    Ok(())
                })
            }
            Kern::Add4 => {
                let (f, a, bb, c) = (&self.add4, &self.a, &self.b, &mut self.c);
                enqueue_ns(count, s, || {
                    let mut b = stream.launch_builder(f);
                    b.arg(a).arg(bb).arg(&mut *c).arg(&n);
                    // SAFETY: as above.
                    unsafe { b.launch(add4_cfg)? };
                    Ok(())
                })
            }
            Kern::Args16 | Kern::Args64 => {
                let (f, m) = if k == Kern::Args16 {
                    (&self.args16, 15)
                } else {
                    (&self.args64, 63)
                };
                let out = &mut self.out;
                enqueue_ns(count, s, || {
                    let mut b = stream.launch_builder(f);
                    b.arg(&mut *out);
                    for v in &vals[..m] {
                        b.arg(v);
                    }
                    // SAFETY: as above.
                    unsafe { b.launch(one)? };
                    Ok(())
                })
            }
        }
    }
}

/// Sets the u32 at `ptr` to 0 (untimed preparation).
fn clear_word(ptr: sys::CUdeviceptr) -> Res<()> {
    // SAFETY: `ptr` is a live allocation of at least one u32 of the current context.
    unsafe { raw!(cuMemsetD32(ptr, 0, 1)) };
    ctx_sync()
}

/// The u32 at `ptr` (untimed checking; the launches' stream is synchronized).
fn read_word(ptr: sys::CUdeviceptr) -> Res<u32> {
    let mut v = 0u32;
    // SAFETY: `ptr` is a live allocation of at least one u32; `v` takes 4 bytes.
    unsafe { raw!(cuMemcpyDtoH((&raw mut v).cast(), ptr, 4)) };
    Ok(v)
}

/// Checks the ADD4_N floats at `c` against a + b.
fn check_add4(c: sys::CUdeviceptr, expected: &[f32]) -> Res<()> {
    let mut got = vec![0.0f32; ADD4_N];
    // SAFETY: `c` holds ADD4_N floats; `got` as many.
    unsafe { raw!(cuMemcpyDtoH(got.as_mut_ptr().cast(), c, ADD4_N * 4)) };
    if let Some(i) = first_difference(&got, expected) {
        return Err(Failure::Wrong(format!(
            "add4: c[{i}] = {}, expected {}",
            got[i], expected[i]
        )));
    }
    Ok(())
}

/// How a row launches on our side.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Checked,
    Unchecked,
    Packed,
    Typed,
}

impl Mode {
    fn sweep(self) -> &'static str {
        match self {
            Mode::Checked => "launch, checked",
            Mode::Unchecked => "launch, unchecked",
            Mode::Packed => "launch, parameter buffer",
            Mode::Typed => "launch, typed",
        }
    }
}

/// Our side's handles and buffers of the launch sweep.
struct Ours {
    empty: Function,
    args1: Function,
    add4: Function,
    args16: Function,
    args64: Function,
    typed: cuda_driver_examples::typed::bench::Kernels,
    out: DeviceBuffer<u32>,
    fx: Add4,
}

impl Ours {
    fn function(&self, k: Kern) -> &Function {
        match k {
            Kern::Empty => &self.empty,
            Kern::Args1 => &self.args1,
            Kern::Add4 => &self.add4,
            Kern::Args16 => &self.args16,
            Kern::Args64 => &self.args64,
        }
    }

    /// `count` launches of `k` on `stream` in `mode`.
    fn enqueue(
        &mut self,
        k: Kern,
        mode: Mode,
        stream: &Stream,
        count: usize,
        vals: &[u32; 63],
    ) -> Res<f64> {
        let s = stream.as_raw();
        let one = LaunchConfig::new(1, 1);
        let acfg = self.fx.config();
        let (v16, v64): (&[u32; 15], &[u32; 63]) = (vals[..15].try_into().expect("15"), vals);
        if mode == Mode::Packed {
            let f = self.function(k).clone();
            let cfg = if k == Kern::Add4 { acfg } else { one };
            let mut pb: ParamBuffer<'_> = ParamBuffer::new();
            match k {
                Kern::Empty => {}
                Kern::Args1 => {
                    pb.push_arg(self.out.as_view())?;
                }
                Kern::Add4 => {
                    pb.push_arg(self.fx.a.as_view())?
                        .push_arg(self.fx.b.as_view())?
                        .push_arg(self.fx.c.as_view())?
                        .push(self.fx.n)?;
                }
                Kern::Args16 | Kern::Args64 => {
                    pb.push_arg(self.out.as_view())?;
                    let m = if k == Kern::Args16 { 15 } else { 63 };
                    for v in &vals[..m] {
                        pb.push(*v)?;
                    }
                }
            }
            // Safe: Function::launch_packed = a context comparison + the buffer's offsets and
            // sizes compared with the cached parameter list + the 5-entry `extra` array on the
            // stack + cuLaunchKernel (raw: the same `extra` launch of the same bytes).
            return enqueue_ns(count, s, || {
                // SAFETY: the buffer holds the kernel's parameters (layout checked by the
                // call); out holds one u32, a, b, c ADD4_N floats; in bounds as for raw.
                unsafe { f.launch_packed(stream, &cfg, &pb)? };
                Ok(())
            });
        }
        let checked = mode == Mode::Checked;
        // Safe, checked: Function::launch = a context comparison + the argument sizes
        // compared with the cached parameter list + the argument pointers on the stack +
        // cuLaunchKernel (on a created stream no cuCtxGetCurrent: the driver takes the
        // context from the stream); unchecked: the pointers + cuLaunchKernel; typed: the
        // generated launcher's checked launch.
        // SAFETY (every launch below): the arguments are the kernel's parameters; out holds
        // one u32, a, b and c ADD4_N floats, the add4 grid covers ADD4_N threads and the
        // kernel skips i >= n; the host touches the buffers only after the stream is
        // synchronized.
        let Ours {
            empty,
            args1,
            add4,
            args16,
            args64,
            typed,
            out,
            fx,
        } = self;
        let Add4 { a, b, c, n, .. } = fx;
        match (k, mode) {
            (Kern::Empty, Mode::Typed) => enqueue_ns(count, s, || {
                // SAFETY: as above.
                unsafe { typed.empty.launch(stream, &one)? };
                Ok(())
            }),
            (Kern::Args1, Mode::Typed) => enqueue_ns(count, s, || {
                // SAFETY: as above.
                unsafe { typed.args1.launch(stream, &one, out.as_view_mut())? };
                Ok(())
            }),
            (Kern::Add4, Mode::Typed) => enqueue_ns(count, s, || {
                // SAFETY: as above.
                unsafe {
                    typed.add4.launch(
                        stream,
                        &acfg,
                        a.as_view(),
                        b.as_view(),
                        c.as_view_mut(),
                        *n,
                    )?
                };
                Ok(())
            }),
            (_, Mode::Typed) => Err(Failure::Usage(format!("no typed launcher for {k:?}"))),
            (Kern::Empty, _) => enqueue_ns(count, s, || {
                // SAFETY: as above.
                unsafe { launch_checked_or_not(empty, checked, stream, &one, ()) }
            }),
            (Kern::Args1, _) => enqueue_ns(count, s, || {
                let args = (out.as_view_mut(),);
                // SAFETY: as above.
                unsafe { launch_checked_or_not(args1, checked, stream, &one, args) }
            }),
            (Kern::Add4, _) => enqueue_ns(count, s, || {
                let args = (&a.as_view(), &b.as_view(), &mut c.as_view_mut(), &*n);
                // SAFETY: as above.
                unsafe { launch_checked_or_not(add4, checked, stream, &acfg, args) }
            }),
            (Kern::Args16, _) => enqueue_ns(count, s, || {
                let args = Args16 {
                    out: out.as_view_mut(),
                    vals: v16,
                };
                // SAFETY: as above.
                unsafe { launch_checked_or_not(args16, checked, stream, &one, args) }
            }),
            (Kern::Args64, _) => enqueue_ns(count, s, || {
                let args = Args64 {
                    out: out.as_view_mut(),
                    vals: v64,
                };
                // SAFETY: as above.
                unsafe { launch_checked_or_not(args64, checked, stream, &one, args) }
            }),
        }
    }
}

/// One launch of `f`, through `Function::launch` when `checked`, else `launch_unchecked`.
///
/// # Safety
/// As for `Function::launch`.
#[inline(always)]
unsafe fn launch_checked_or_not<A: KernelArgs>(
    f: &Function,
    checked: bool,
    stream: &Stream,
    cfg: &LaunchConfig,
    args: A,
) -> Res<()> {
    // SAFETY: the caller's guarantees.
    unsafe {
        if checked {
            f.launch(stream, cfg, args)?
        } else {
            f.launch_unchecked(stream, cfg, args)?
        }
    };
    Ok(())
}

/// The launch sweep: for 0, 1, 4, 16 and 64 parameters, checked (with cudarc on one and on
/// two streams), unchecked, from a parameter buffer and typed; then the round trip.
pub fn launches(
    r: &mut Runner,
    cfg: &Config,
    ctx: &Context,
    stream: &Stream,
    rc: &Cudarc,
) -> Res<()> {
    let module = Module::load_data(ctx, ptx::BENCH)?;
    let margs = Module::load_data(ctx, ptx::BENCH_ARGS)?;
    let mut ours = Ours {
        empty: module.function("empty")?,
        args1: module.function("args1")?,
        add4: module.function("add4")?,
        args16: margs.function("args16")?,
        args64: margs.function("args64")?,
        typed: cuda_driver_examples::typed::bench::Kernels::load(ctx)?,
        out: DeviceBuffer::<u32>::zeroed(ctx, 1)?,
        fx: Add4::new(ctx)?,
    };
    let mut vals = [0u32; 63];
    for (i, v) in vals.iter_mut().enumerate() {
        *v = i as u32 + 1;
    }
    // Read the parameter lists now, as the warm-up would: the checked launches' first call
    // asks the driver once and caches the answer.
    for k in Kern::ALL {
        let p = ours.function(k).params()?;
        check!(
            p.as_ref().is_none_or(|p| p.len() == k.args() as usize),
            "{} does not have {} parameters: {p:?}",
            k.name(),
            k.args()
        );
    }
    let mut cudarc1 = CudarcKernels::new(&rc.one, &rc.s1, &ours.fx)?;
    let mut cudarc2 = CudarcKernels::new(&rc.two, &rc.s2, &ours.fx)?;

    // The raw side: the argument arrays built once, as a C program would.
    let ra: &mut RawArgs = Box::leak(Box::new(RawArgs {
        out: ours.out.as_raw(),
        a: ours.fx.a.as_raw(),
        b: ours.fx.b.as_raw(),
        c: ours.fx.c.as_raw(),
        n: ours.fx.n,
        vals,
    }));
    let ra: *mut RawArgs = ra;
    // SAFETY: `ra` is leaked, so valid for the rest of the program; only these pointers
    // are taken from it.
    let (p_out, p_a, p_b, p_c, p_n, p_vals) = unsafe {
        (
            (&raw mut (*ra).out).cast::<c_void>(),
            (&raw mut (*ra).a).cast::<c_void>(),
            (&raw mut (*ra).b).cast::<c_void>(),
            (&raw mut (*ra).c).cast::<c_void>(),
            (&raw mut (*ra).n).cast::<c_void>(),
            (&raw mut (*ra).vals).cast::<u32>(),
        )
    };
    let params = |k: Kern| -> Vec<*mut c_void> {
        match k {
            Kern::Empty => Vec::new(),
            Kern::Args1 => vec![p_out],
            Kern::Add4 => vec![p_a, p_b, p_c, p_n],
            Kern::Args16 | Kern::Args64 => {
                let m = k.args() as usize - 1;
                // SAFETY: `p_vals` points to 63 u32 values; m <= 63.
                std::iter::once(p_out)
                    .chain((0..m).map(|i| unsafe { p_vals.add(i) }.cast()))
                    .collect()
            }
        }
    };
    // The packed form of the same arguments, for the parameter-buffer rows: raw launches
    // them through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) as ours does. Every kernel here
    // takes its pointers first and then 4-byte values, so the packed layout is the pointers
    // (8 bytes each) followed by the values, each at its natural alignment.
    let packed = |k: Kern| -> Vec<u8> {
        // SAFETY: `ra` is leaked and initialised above; only read here.
        let ra = unsafe { &*ra };
        let mut b = Vec::new();
        match k {
            Kern::Empty => {}
            Kern::Args1 => b.extend_from_slice(&ra.out.to_ne_bytes()),
            Kern::Add4 => {
                for p in [ra.a, ra.b, ra.c] {
                    b.extend_from_slice(&p.to_ne_bytes());
                }
                b.extend_from_slice(&ra.n.to_ne_bytes());
            }
            Kern::Args16 | Kern::Args64 => {
                b.extend_from_slice(&ra.out.to_ne_bytes());
                for v in &ra.vals[..k.args() as usize - 1] {
                    b.extend_from_slice(&v.to_ne_bytes());
                }
            }
        }
        b
    };
    let s = stream.as_raw();
    let count = cfg.launches;
    let add4_grid = ours.fx.config().grid.x;
    let expected_add4 = ours.fx.expected.clone();

    for k in Kern::ALL {
        let mut p = params(k);
        let f = ours.function(k).as_raw();
        let (g, block) = if k == Kern::Add4 {
            (add4_grid, BLOCK)
        } else {
            (1, 1)
        };
        for mode in [Mode::Checked, Mode::Unchecked, Mode::Packed, Mode::Typed] {
            if (mode == Mode::Packed && k == Kern::Empty) || (mode == Mode::Typed && k.args() > 12)
            {
                continue;
            }
            let sides = if mode == Mode::Checked { ALL } else { TWO };
            let row = Row::new(
                format!("{}, {}", mode.sweep(), k.name()),
                "us/launch",
                false,
                Some(1.02),
            )
            .with_args(mode.sweep(), k.args());
            r.measure(row, sides, |who, _| {
                // The output, cleared (untimed), and its address for the check.
                let (out, c) = match who {
                    Who::Raw | Who::Ours => (ours.out.as_raw(), ours.fx.c.as_raw()),
                    Who::Cudarc => (cptr(&cudarc1.out, &rc.s1), cptr(&cudarc1.c, &rc.s1)),
                    Who::Cudarc2 => (cptr(&cudarc2.out, &rc.s2), cptr(&cudarc2.c, &rc.s2)),
                };
                clear_word(out)?;
                // SAFETY: `c` holds ADD4_N floats.
                unsafe { raw!(cuMemsetD32(c, 0, ADD4_N)) };
                ctx_sync()?;
                let ns = match who {
                    Who::Raw if mode == Mode::Packed => {
                        let mut buf = packed(k);
                        let mut size = buf.len();
                        let mut extra: [*mut c_void; 5] = [
                            sys::CU_LAUNCH_PARAM_BUFFER_POINTER,
                            buf.as_mut_ptr().cast(),
                            sys::CU_LAUNCH_PARAM_BUFFER_SIZE,
                            (&raw mut size).cast(),
                            sys::CU_LAUNCH_PARAM_END,
                        ];
                        enqueue_ns(count, s, || {
                            // SAFETY: `extra` names the packed parameters (the kernel's
                            // layout, as above) and their size, alive for the loop; bounds
                            // as for the kernelParams launches below.
                            unsafe { raw_launch(f, g, block, s, null_mut(), extra.as_mut_ptr()) }
                        })?
                    }
                    Who::Raw => enqueue_ns(count, s, || {
                        // SAFETY: `p` points to the kernel's parameters (the locals of
                        // RawArgs, alive for the program), as many as it has; the grid
                        // covers ADD4_N threads for add4, one thread otherwise; every
                        // kernel stays inside its buffers.
                        let params = if p.is_empty() {
                            null_mut()
                        } else {
                            p.as_mut_ptr()
                        };
                        // SAFETY: as above.
                        unsafe { raw_launch(f, g, block, s, params, null_mut()) }
                    })?,
                    Who::Ours => ours.enqueue(k, mode, stream, count, &vals)?,
                    Who::Cudarc => cudarc1.enqueue(k, &rc.s1, count, &vals)?,
                    Who::Cudarc2 => cudarc2.enqueue(k, &rc.s2, count, &vals)?,
                };
                match k {
                    Kern::Empty => {}
                    Kern::Add4 => check_add4(c, &expected_add4)?,
                    _ => {
                        let got = read_word(out)?;
                        check!(
                            got == k.expected(count),
                            "{}: out[0] = {got}, expected {}",
                            k.name(),
                            k.expected(count)
                        );
                    }
                }
                Ok(ns / 1e3)
            })?;
        }
    }

    // Round trip: launch empty(), wait for it; the median iteration.
    // Safe: Function::launch as above + Stream::synchronize = cuStreamSynchronize (no
    // context entered on a created stream). cudarc: the builder's launch + CudaStream::synchronize.
    let trips = cfg.round_trips;
    let mut times = Vec::with_capacity(trips);
    let f_empty = ours.empty.as_raw();
    let one = LaunchConfig::new(1, 1);
    let c_one = CudarcConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    r.measure(
        Row::new(
            "launch empty() + stream synchronize".into(),
            "us",
            false,
            Some(1.02),
        ),
        ALL,
        |who, _| {
            times.clear();
            for _ in 0..trips {
                let start = Instant::now();
                match who {
                    // SAFETY: empty() takes no parameters; the stream is live.
                    Who::Raw => unsafe {
                        raw_launch(f_empty, 1, 1, s, null_mut(), null_mut())?;
                        raw!(cuStreamSynchronize(s));
                    },
                    Who::Ours => {
                        // SAFETY: empty() takes no parameters and touches no memory.
                        unsafe { ours.empty.launch(stream, &one, ())? };
                        stream.synchronize()?;
                    }
                    Who::Cudarc | Who::Cudarc2 => {
                        let (st, f) = if who == Who::Cudarc {
                            (&rc.s1, &cudarc1.empty)
                        } else {
                            (&rc.s2, &cudarc2.empty)
                        };
                        // SAFETY: empty() takes no parameters and touches no memory.
                        unsafe { st.launch_builder(f).launch(c_one)? };
                        st.synchronize()?;
                    }
                }
                times.push(secs(start.elapsed()));
            }
            Ok(median(&times).unwrap_or(f64::NAN) * 1e6)
        },
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Copies by size
// ---------------------------------------------------------------------------------------

/// A copy's direction and host memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    HtoDPinned,
    HtoDPageable,
    DtoHPinned,
    DtoHPageable,
    DtoD,
}

impl Dir {
    const ALL: [Dir; 5] = [
        Dir::HtoDPinned,
        Dir::HtoDPageable,
        Dir::DtoHPinned,
        Dir::DtoHPageable,
        Dir::DtoD,
    ];

    fn sweep(self) -> &'static str {
        match self {
            Dir::HtoDPinned => "copy HtoD, page-locked",
            Dir::HtoDPageable => "copy HtoD, pageable",
            Dir::DtoHPinned => "copy DtoH, page-locked",
            Dir::DtoHPageable => "copy DtoH, pageable",
            Dir::DtoD => "copy DtoD",
        }
    }
}

/// Words compared at each end of a copy's destination in a timed sample (1 MiB).
const CHECK_WORDS: usize = 1 << 18;

/// The ranges of word indices a sample checks: all of `0..words` when `full`, else the first
/// and last [`CHECK_WORDS`].
fn check_ranges(words: usize, full: bool) -> Vec<std::ops::Range<usize>> {
    if full || words <= 2 * CHECK_WORDS {
        std::iter::once(0..words).collect()
    } else {
        vec![0..CHECK_WORDS, words - CHECK_WORDS..words]
    }
}

/// Clears the device words `range` of `ptr` (untimed).
fn clear_dev(ptr: sys::CUdeviceptr, range: &std::ops::Range<usize>) -> Res<()> {
    // SAFETY: the range lies inside the allocation at `ptr` (callers pass ranges of its
    // length in words).
    unsafe { raw!(cuMemsetD32(ptr + 4 * range.start as u64, 0, range.len())) };
    ctx_sync()
}

/// Compares the device words `range` of `ptr` with `want[range]` through `scratch`.
fn check_dev(
    what: &str,
    ptr: sys::CUdeviceptr,
    range: &std::ops::Range<usize>,
    want: &[u32],
    scratch: &mut [u32],
) -> Res<()> {
    for off in range.clone().step_by(scratch.len()) {
        let n = scratch.len().min(range.end - off);
        let got = &mut scratch[..n];
        // SAFETY: words off..off + n lie inside the allocation; `got` holds n words.
        unsafe {
            raw!(cuMemcpyDtoH(
                got.as_mut_ptr().cast(),
                ptr + 4 * off as u64,
                4 * n
            ))
        };
        compare(
            &format!("{what}, from word {off}"),
            got,
            &want[off..off + n],
        )?;
    }
    Ok(())
}

/// The copy sweep: every direction at every size, raw, ours and cudarc on one and two
/// streams; then memset at the largest size.
pub fn copies(r: &mut Runner, cfg: &Config, ctx: &Context, rc: &Cudarc) -> Res<()> {
    let max = *cfg.copy_sizes.iter().max().expect("sizes");
    let max_words = max / 4;
    let mut rng = XorShift::new(0xC0B1E5);

    // The data: pseudo-random, never zero; the pageable source is also the expected value.
    let mut host = vec![0u32; max_words];
    rng.fill_nonzero_u32(&mut host);
    let pinned_src = PinnedBuffer::from_slice(ctx, &host, PinnedFlags::empty())?;
    let mut pinned_dst = PinnedBuffer::<u32>::zeroed(ctx, max_words, PinnedFlags::empty())?;
    let mut pageable_dst = vec![0u32; max_words];
    let mut dev = DeviceBuffer::<u32>::new(ctx, max_words)?;
    let mut ddst = DeviceBuffer::<u32>::new(ctx, max_words)?;
    let mut scratch = vec![0u32; CHECK_WORDS];
    // cudarc: its own device buffers on each stream, and (below) its own page-locked
    // buffers of each size (cudarc's cannot be sliced; flags 0, as ours: alloc_pinned would
    // make them write-combined).
    let mut c_dev: Vec<CudaSlice<u32>> = Vec::new();
    let mut c_ddst: Vec<CudaSlice<u32>> = Vec::new();
    for who in [Who::Cudarc, Who::Cudarc2] {
        let st = rc.stream(who);
        c_dev.push(st.clone_htod(&host)?);
        // SAFETY: written by the copies before it is read.
        c_ddst.push(unsafe { st.alloc::<u32>(max_words) }?);
        st.synchronize()?;
    }
    let ci = |who: Who| usize::from(who == Who::Cudarc2);

    for dir in Dir::ALL {
        // The device source of the DtoH and DtoD copies holds `host` (untimed).
        // SAFETY: `dev` holds max_words words, as `host`.
        unsafe { raw!(cuMemcpyHtoD(dev.as_raw(), host.as_ptr().cast(), max)) };
        for &bytes in cfg.copy_sizes {
            let words = bytes / 4;
            // Device-to-device copies are ~50 times faster: a 16 times larger budget keeps
            // their samples long enough to time.
            let budget = if dir == Dir::DtoD {
                16 * cfg.copy_budget
            } else {
                cfg.copy_budget
            };
            let reps = budget
                .div_ceil(bytes)
                .clamp(cfg.copy_min_reps, cfg.copy_max_reps);
            let small = bytes <= 64 * KIB;
            let (unit, higher, target) = if small {
                ("us/copy", false, 1.05)
            } else {
                ("GB/s", true, 1.02)
            };
            let moved = if dir == Dir::DtoD { 2 * bytes } else { bytes } * reps;
            let name = format!(
                "{}, {}{}",
                dir.sweep(),
                size_name(bytes),
                if dir == Dir::DtoD && !small {
                    " (read + write)"
                } else {
                    ""
                }
            );
            let row = Row::new(name, unit, higher, Some(target)).sized(dir.sweep(), bytes);
            let mut c_pin: Option<PinnedHostSlice<u32>> = match dir {
                Dir::HtoDPinned | Dir::DtoHPinned => {
                    // SAFETY: written before it is read (the source right here, the
                    // destination by the copies, checked only where written).
                    let mut p = unsafe { rc.one.alloc_pinned_with_flags::<u32>(words, 0) }?;
                    p.as_mut_slice()?.copy_from_slice(&host[..words]);
                    Some(p)
                }
                _ => None,
            };
            let (d, dd) = (dev.as_raw(), ddst.as_raw());
            r.measure(row, ALL, |who, full| {
                let ranges = check_ranges(words, full);
                // The destination: its address (device) or slice (host), cleared where
                // checked.
                let dst_dev = match (dir, who) {
                    (Dir::HtoDPinned | Dir::HtoDPageable, Who::Raw | Who::Ours) => Some(d),
                    (Dir::DtoD, Who::Raw | Who::Ours) => Some(dd),
                    (Dir::HtoDPinned | Dir::HtoDPageable, _) => {
                        Some(cptr(&c_dev[ci(who)], rc.stream(who)))
                    }
                    (Dir::DtoD, _) => Some(cptr(&c_ddst[ci(who)], rc.stream(who))),
                    _ => None,
                };
                match dst_dev {
                    Some(p) => {
                        for rg in &ranges {
                            clear_dev(p, rg)?;
                        }
                    }
                    None => {
                        let h: &mut [u32] = match (dir, who) {
                            (Dir::DtoHPinned, Who::Raw | Who::Ours) => &mut pinned_dst,
                            (Dir::DtoHPageable, _) => &mut pageable_dst,
                            _ => c_pin.as_mut().expect("page-locked").as_mut_slice()?,
                        };
                        for rg in &ranges {
                            h[rg.clone()].fill(0);
                        }
                    }
                }
                let t = match who {
                    Who::Raw => time_loop(reps, ctx_sync, || {
                        // SAFETY: every buffer holds at least `bytes` bytes; the device ones
                        // do not overlap.
                        unsafe {
                            match dir {
                                Dir::HtoDPinned => {
                                    raw!(cuMemcpyHtoD(d, pinned_src.as_ptr().cast(), bytes))
                                }
                                Dir::HtoDPageable => {
                                    raw!(cuMemcpyHtoD(d, host.as_ptr().cast(), bytes))
                                }
                                Dir::DtoHPinned => {
                                    raw!(cuMemcpyDtoH(pinned_dst.as_mut_ptr().cast(), d, bytes))
                                }
                                Dir::DtoHPageable => {
                                    raw!(cuMemcpyDtoH(pageable_dst.as_mut_ptr().cast(), d, bytes))
                                }
                                Dir::DtoD => raw!(cuMemcpyDtoD(dd, d, bytes)),
                            }
                        }
                        Ok(())
                    })?,
                    // Safe: the views made once, outside the loop; each copy = length check
                    // + cuCtxGetCurrent + cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2 / cuMemcpyDtoD_v2.
                    Who::Ours => match dir {
                        Dir::HtoDPinned | Dir::HtoDPageable => {
                            let src: &[u32] = if dir == Dir::HtoDPinned {
                                &pinned_src[..words]
                            } else {
                                &host[..words]
                            };
                            let mut v = dev.as_view_mut().into_slice_mut(..words)?;
                            time_loop(reps, ctx_sync, || Ok(v.copy_from_host(src)?))?
                        }
                        Dir::DtoHPinned | Dir::DtoHPageable => {
                            let v = dev.as_view().slice(..words)?;
                            let dst: &mut [u32] = if dir == Dir::DtoHPinned {
                                &mut pinned_dst[..words]
                            } else {
                                &mut pageable_dst[..words]
                            };
                            time_loop(reps, ctx_sync, || Ok(v.copy_to_host(dst)?))?
                        }
                        Dir::DtoD => {
                            let src = dev.as_view().slice(..words)?;
                            let mut v = ddst.as_view_mut().into_slice_mut(..words)?;
                            time_loop(reps, ctx_sync, || Ok(v.copy_from_device(&src)?))?
                        }
                    },
                    // cudarc: its views made once, outside the loop; each copy =
                    // CudaStream::memcpy_* (cuCtxSetCurrent, in multi-stream mode the
                    // buffers' event waits and records, page-locked memory's own event wait
                    // and record, cuMemcpy*Async_v2), a host copy followed by a stream
                    // synchronize (what the synchronous copies of raw and ours amount to);
                    // one stream synchronize at the end.
                    Who::Cudarc | Who::Cudarc2 => {
                        let st = rc.stream(who);
                        let end = || synchronize(st);
                        let i = ci(who);
                        match dir {
                            Dir::HtoDPinned => {
                                let mut v = c_dev[i].slice_mut(..words);
                                let src = c_pin.as_ref().expect("page-locked");
                                time_loop(reps, end, || {
                                    st.memcpy_htod(src, &mut v)?;
                                    synchronize(st)
                                })?
                            }
                            Dir::HtoDPageable => {
                                let mut v = c_dev[i].slice_mut(..words);
                                let src = &host[..words];
                                time_loop(reps, end, || {
                                    st.memcpy_htod(src, &mut v)?;
                                    synchronize(st)
                                })?
                            }
                            Dir::DtoHPinned => {
                                // The source: a view of cudarc's device buffer, which holds
                                // `host` as the one raw and ours copy from.
                                let v = c_dev[i].slice(..words);
                                let dst = c_pin.as_mut().expect("page-locked");
                                time_loop(reps, end, || {
                                    st.memcpy_dtoh(&v, dst)?;
                                    synchronize(st)
                                })?
                            }
                            Dir::DtoHPageable => {
                                let v = c_dev[i].slice(..words);
                                let dst = &mut pageable_dst[..words];
                                time_loop(reps, end, || {
                                    st.memcpy_dtoh(&v, dst)?;
                                    synchronize(st)
                                })?
                            }
                            Dir::DtoD => {
                                let (src, dst) = (&c_dev[i], &mut c_ddst[i]);
                                let sv = src.slice(..words);
                                let mut dv = dst.slice_mut(..words);
                                time_loop(reps, end, || Ok(st.memcpy_dtod(&sv, &mut dv)?))?
                            }
                        }
                    }
                };
                // Check the destination.
                match dst_dev {
                    Some(p) => {
                        for rg in &ranges {
                            check_dev(dir.sweep(), p, rg, &host, &mut scratch)?;
                        }
                    }
                    None => {
                        let h: &[u32] = match (dir, who) {
                            (Dir::DtoHPinned, Who::Raw | Who::Ours) => &pinned_dst,
                            (Dir::DtoHPageable, _) => &pageable_dst,
                            _ => c_pin.as_ref().expect("page-locked").as_slice()?,
                        };
                        for rg in &ranges {
                            compare(dir.sweep(), &h[rg.clone()], &host[rg.clone()])?;
                        }
                    }
                }
                Ok(if small {
                    secs(t) * 1e6 / reps as f64
                } else {
                    moved as f64 / secs(t) / 1e9
                })
            })?;
        }
        // cudarc's HtoD rows wrote `host` into its device buffers, which its DtoH and DtoD
        // rows read; make sure they hold it whichever rows ran.
        for (i, who) in [Who::Cudarc, Who::Cudarc2].into_iter().enumerate() {
            let p = cptr(&c_dev[i], rc.stream(who));
            rc.stream(who).synchronize()?;
            // SAFETY: the cudarc buffer holds max_words words, as `host`.
            unsafe { raw!(cuMemcpyHtoD(p, host.as_ptr().cast(), max)) };
        }
    }
    drop(pageable_dst);

    // memset of the largest size: a different non-zero value each sample for raw and ours,
    // so a memset that did nothing fails; cudarc has memset_zeros only (cuMemsetD8Async),
    // its buffer filled with ones before.
    let big_words = max_words;
    let big_reps = if cfg.quick { 5 } else { 20 };
    let mut sample_no: u32 = 0;
    let bd = ddst.as_raw();
    r.measure(
        Row::new(
            format!("memset, {}", size_name(max)),
            "GB/s",
            true,
            Some(1.02),
        ),
        ALL,
        |who, full| {
            sample_no += 1;
            // Odd multiples of an odd constant: distinct for distinct sample numbers.
            let value = (2 * sample_no + 1).wrapping_mul(0x9E37_79B1);
            let target = match who {
                Who::Raw | Who::Ours => bd,
                _ => cptr(&c_ddst[ci(who)], rc.stream(who)),
            };
            if matches!(who, Who::Cudarc | Who::Cudarc2) {
                // SAFETY: the buffer holds big_words words.
                unsafe { raw!(cuMemsetD32(target, u32::MAX, big_words)) };
                ctx_sync()?;
            }
            let t = match who {
                Who::Raw => time_loop(big_reps, ctx_sync, || {
                    // SAFETY: ddst holds `big_words` words.
                    unsafe { raw!(cuMemsetD32(bd, value, big_words)) };
                    Ok(())
                })?,
                // Safe: DeviceBuffer::memset = size check + cuCtxGetCurrent + cuMemsetD32_v2.
                Who::Ours => time_loop(big_reps, ctx_sync, || Ok(ddst.memset(value)?))?,
                Who::Cudarc | Who::Cudarc2 => {
                    let st = rc.stream(who);
                    let buf = &mut c_ddst[ci(who)];
                    time_loop(big_reps, || synchronize(st), || Ok(st.memset_zeros(buf)?))?
                }
            };
            let want = if matches!(who, Who::Raw | Who::Ours) {
                value
            } else {
                0
            };
            for rg in check_ranges(big_words, full) {
                for off in rg.clone().step_by(scratch.len()) {
                    let n = scratch.len().min(rg.end - off);
                    let got = &mut scratch[..n];
                    // SAFETY: words off..off + n lie inside the buffer; `got` holds n.
                    unsafe {
                        raw!(cuMemcpyDtoH(
                            got.as_mut_ptr().cast(),
                            target + 4 * off as u64,
                            4 * n
                        ))
                    };
                    if let Some(i) = got.iter().position(|&w| w != want) {
                        return Err(Failure::Wrong(format!(
                            "memset: word {} is {:#010x}, expected {want:#010x}",
                            off + i,
                            got[i]
                        )));
                    }
                }
            }
            Ok((big_reps * max) as f64 / secs(t) / 1e9)
        },
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Allocation by size
// ---------------------------------------------------------------------------------------

/// The allocation sweep: cuMemAlloc + cuMemFree (raw, ours) and cuMemAllocAsync +
/// cuMemFreeAsync (raw, ours, cudarc) at each size.
pub fn allocations(
    r: &mut Runner,
    cfg: &Config,
    ctx: &Context,
    stream: &Stream,
    rc: &Cudarc,
) -> Res<()> {
    let s = stream.as_raw();
    for &(bytes, sync_count, async_count) in cfg.alloc_sizes {
        let sweep = "allocate + free";
        r.measure(
            Row::new(
                format!("{sweep}, {}", size_name(bytes)),
                "us/pair",
                false,
                Some(1.02),
            )
            .sized(sweep, bytes),
            TWO,
            |who, _| {
                let count = sync_count;
                let t = match who {
                    Who::Raw => time_loop(count, no_end, || {
                        let mut p: sys::CUdeviceptr = 0;
                        // SAFETY: writes one CUdeviceptr, freed right after; context current.
                        unsafe {
                            raw!(cuMemAlloc(&mut p, bytes));
                            raw!(cuMemFree(p));
                        }
                        Ok(())
                    })?,
                    // Safe: DeviceBuffer::new = size check + cuCtxGetCurrent + cuMemAlloc_v2 +
                    // a Context clone (atomic increment); drop = cuCtxGetCurrent +
                    // cuMemFree_v2 + an atomic decrement.
                    _ => time_loop(count, no_end, || {
                        drop(DeviceBuffer::<u8>::new(ctx, bytes)?);
                        Ok(())
                    })?,
                };
                Ok(secs(t) * 1e6 / count as f64)
            },
        )?;
        let sweep = "stream-ordered allocate + free";
        r.measure(
            Row::new(
                format!("{sweep}, {}, one sync", size_name(bytes)),
                "us/pair",
                false,
                Some(1.02),
            )
            .sized(sweep, bytes),
            ALL,
            |who, _| {
                let count = async_count;
                let sync = || {
                    // SAFETY: live stream.
                    unsafe { raw!(cuStreamSynchronize(s)) };
                    Ok(())
                };
                let t = match who {
                    Who::Raw => time_loop(count, sync, || {
                        let mut p: sys::CUdeviceptr = 0;
                        // SAFETY: writes one CUdeviceptr, freed in stream order right after;
                        // the stream is live.
                        unsafe {
                            raw!(cuMemAllocAsync(&mut p, bytes, s));
                            raw!(cuMemFreeAsync(p, s));
                        }
                        Ok(())
                    })?,
                    // Safe: DeviceBuffer::new_async = size check + cuMemAllocAsync;
                    // AsyncDeviceBuffer::free_async = cuMemFreeAsync; Stream::synchronize =
                    // cuStreamSynchronize (on a created stream no context is entered).
                    Who::Ours => time_loop(
                        count,
                        || Ok(stream.synchronize()?),
                        || Ok(DeviceBuffer::<u8>::new_async(stream, bytes)?.free_async()?),
                    )?,
                    // cudarc: CudaStream::alloc = cuCtxSetCurrent + cuMemAllocAsync + two
                    // cuEventCreate (its read and write events; event tracking is on by
                    // default); drop = (multi-stream mode: two cuStreamWaitEvent) +
                    // cuMemFreeAsync + two cuEventDestroy.
                    Who::Cudarc | Who::Cudarc2 => {
                        let st = rc.stream(who);
                        time_loop(
                            count,
                            || synchronize(st),
                            || {
                                // SAFETY: never read; freed at once.
                                drop(unsafe { st.alloc::<u8>(bytes) }?);
                                Ok(())
                            },
                        )?
                    }
                };
                Ok(secs(t) * 1e6 / count as f64)
            },
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Loading a small and a large PTX
// ---------------------------------------------------------------------------------------

/// Module loading (raw, ours, cudarc) and library loading (raw, ours) of ptx/bench.ptx and
/// ptx/bench_large.ptx, each load with its unload; then the library round trip of the
/// capability rows (load, get the kernel, first launch, synchronize, unload).
pub fn loading(
    r: &mut Runner,
    cfg: &Config,
    ctx: &Context,
    stream: &Stream,
    rc: &Cudarc,
) -> Res<()> {
    for (image, count) in [(ptx::BENCH, cfg.loads.0), (ptx::BENCH_LARGE, cfg.loads.1)] {
        let size = image.len() - 1;
        let what = if image.len() < 64 * KIB {
            "bench.ptx"
        } else {
            "bench_large.ptx"
        };
        let sweep = "module load + unload";
        r.measure(
            Row::new(
                format!("{sweep}, {what} ({})", size_name_kb(size)),
                "ms",
                false,
                Some(1.02),
            )
            .sized(sweep, size),
            ALL,
            |who, _| {
                let t = match who {
                    Who::Raw => time_loop(count, no_end, || {
                        let mut m: sys::CUmodule = null_mut();
                        // SAFETY: NUL-terminated PTX; the module is unloaded right after.
                        unsafe {
                            raw!(cuModuleLoadData(&mut m, image.as_ptr().cast::<c_void>()));
                            raw!(cuModuleUnload(m));
                        }
                        Ok(())
                    })?,
                    // Safe: Module::load_data = the image check (a memchr for the NUL) +
                    // cuCtxGetCurrent + cuModuleLoadData (no JIT option set: no log buffers;
                    // no parameter metadata read) + an Arc; drop = cuCtxGetCurrent +
                    // cuModuleUnload. The image ends in NUL: no copy.
                    Who::Ours => time_loop(count, no_end, || {
                        drop(Module::load_data(ctx, image)?);
                        Ok(())
                    })?,
                    // cudarc: load_module = cuCtxSetCurrent + a CString copy of the text +
                    // cuModuleLoadData + an Arc; drop = cuCtxSetCurrent + cuModuleUnload.
                    Who::Cudarc | Who::Cudarc2 => {
                        let c = rc.ctx(who);
                        let text = ptx_text(image);
                        time_loop(count, no_end, || {
                            drop(c.load_module(Ptx::from_src(text))?);
                            Ok(())
                        })?
                    }
                };
                Ok(secs(t) * 1e3 / count as f64)
            },
        )?;
        let sweep = "library load + unload";
        r.measure(
            Row::new(
                format!("{sweep}, {what} ({})", size_name_kb(size)),
                "ms",
                false,
                Some(1.02),
            )
            .sized(sweep, size),
            TWO,
            |who, _| {
                let t = match who {
                    Who::Raw => time_loop(count, no_end, || {
                        let mut lib: sys::CUlibrary = null_mut();
                        // SAFETY: NUL-terminated PTX, no options; unloaded right after.
                        unsafe {
                            raw!(cuLibraryLoadData(
                                &mut lib,
                                image.as_ptr().cast::<c_void>(),
                                null_mut(),
                                null_mut(),
                                0,
                                null_mut(),
                                null_mut(),
                                0
                            ));
                            raw!(cuLibraryUnload(lib));
                        }
                        Ok(())
                    })?,
                    // Safe: Library::load_data = the image check + cuLibraryLoadData with 2
                    // JIT options (the error log buffer, recycled per thread with its call,
                    // and its size; the cost of these options alone is the next row) + an
                    // Arc; no parameter metadata read; drop = cuLibraryUnload.
                    _ => time_loop(count, no_end, || {
                        drop(Library::load_data(image)?);
                        Ok(())
                    })?,
                };
                Ok(secs(t) * 1e3 / count as f64)
            },
        )?;
        // What the driver charges for the JIT options a library load passes so that a
        // compile error (which lazy loading may defer to the first use) comes with its log:
        // raw against raw with the same two options, the error log buffer of 16 KiB and its
        // size (in the ours column). No target; it explains the row above.
        r.measure(
            Row::new(
                format!(
                    "library load + unload, {what}: raw, and raw with the crate's 2 JIT \
                     error-log options (ours column)"
                ),
                "ms",
                false,
                None,
            ),
            TWO,
            |who, _| {
                let mut error = vec![0u8; 16 * KIB];
                let t = time_loop(count, no_end, || {
                    let mut lib: sys::CUlibrary = null_mut();
                    let mut options = [
                        sys::CU_JIT_ERROR_LOG_BUFFER,
                        sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                    ];
                    let mut values: [*mut c_void; 2] =
                        [error.as_mut_ptr().cast(), (16 * KIB) as *mut c_void];
                    let (n, o, v) = match who {
                        Who::Raw => (0, null_mut(), null_mut()),
                        _ => (2, options.as_mut_ptr(), values.as_mut_ptr()),
                    };
                    // SAFETY: NUL-terminated PTX; the option arrays hold `n` entries whose
                    // buffers outlive the library, unloaded right after.
                    unsafe {
                        raw!(cuLibraryLoadData(
                            &mut lib,
                            image.as_ptr().cast::<c_void>(),
                            o,
                            v,
                            n,
                            null_mut(),
                            null_mut(),
                            0
                        ));
                        raw!(cuLibraryUnload(lib));
                    }
                    Ok(())
                })?;
                Ok(secs(t) * 1e3 / count as f64)
            },
        )?;
    }
    library_round_trip(r, cfg, ctx, stream)
}

/// A size in KiB with one decimal, for the PTX sizes.
fn size_name_kb(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / KIB as f64)
}

/// Load + get kernel + first add4 launch + synchronize + unload of ptx/bench.ptx, against
/// raw and against its floor: raw plus the parameter queries the first checked launch makes.
fn library_round_trip(r: &mut Runner, cfg: &Config, ctx: &Context, stream: &Stream) -> Res<()> {
    let count = cfg.loads.0;
    let s = stream.as_raw();
    let mut add4 = Add4::new(ctx)?;
    let (mut pa, mut pb, mut pc, mut pn) =
        (add4.a.as_raw(), add4.b.as_raw(), add4.c.as_raw(), add4.n);
    let mut args: [*mut c_void; 4] = [
        (&raw mut pa).cast(),
        (&raw mut pb).cast(),
        (&raw mut pc).cast(),
        (&raw mut pn).cast(),
    ];
    let add4_cfg = add4.config();
    let g = add4_cfg.grid.x;
    // The raw round trip; with `queries`, the kernel's parameters are asked for as a first
    // checked launch asks for them: add4's 4, then index 4, which the driver refuses with
    // CUDA_ERROR_INVALID_VALUE (the end of the list; CUDA 13.0 has no count query).
    let mut raw_trip = |queries: bool| -> Res<Duration> {
        time_loop(count, no_end, || {
            let mut lib: sys::CUlibrary = null_mut();
            let mut k: sys::CUkernel = null_mut();
            // SAFETY: NUL-terminated PTX, no options; the kernel handle is used as a
            // CUfunction for cuLaunchKernel (allowed for CUkernel) while the library is
            // loaded; add4's arguments as in `launches`; the parameter queries write two
            // size_t each.
            unsafe {
                raw!(cuLibraryLoadData(
                    &mut lib,
                    ptx::BENCH.as_ptr().cast::<c_void>(),
                    null_mut(),
                    null_mut(),
                    0,
                    null_mut(),
                    null_mut(),
                    0
                ));
                raw!(cuLibraryGetKernel(&mut k, lib, c"add4".as_ptr()));
                if queries {
                    for i in 0..=4 {
                        let (mut offset, mut size) = (0usize, 0usize);
                        let rc = sys::cuKernelGetParamInfo(k, i, &mut offset, &mut size);
                        let expected = if i < 4 {
                            sys::CUDA_SUCCESS
                        } else {
                            sys::CUDA_ERROR_INVALID_VALUE
                        };
                        if rc != expected {
                            return Err(Failure::Wrong(format!(
                                "cuKernelGetParamInfo(add4, {i}) returned {rc}"
                            )));
                        }
                        std::hint::black_box((offset, size));
                    }
                }
                raw_launch(k.cast(), g, BLOCK, s, args.as_mut_ptr(), null_mut())?;
                raw!(cuStreamSynchronize(s));
                raw!(cuLibraryUnload(lib));
            }
            Ok(())
        })
    };
    // Safe: Library::load_data as above; Library::kernel = cuLibraryGetKernel (the name
    // copied to the stack) + the name boxed into the kernel's cache; the first checked
    // Kernel::launch = cuCtxGetCurrent (once, for the queries) + cuKernelGetParamInfo for
    // each of the 4 parameters and once more (the end of the list) + a boxed list +
    // cuLaunchKernel; Stream::synchronize = cuStreamSynchronize; dropping the kernel and the
    // library = cuLibraryUnload.
    let safe_trip = |add4: &mut Add4| -> Res<Duration> {
        let Add4 { a, b, c, n, .. } = add4;
        time_loop(count, no_end, || {
            let lib = Library::load_data(ptx::BENCH)?;
            let kernel = lib.kernel("add4")?;
            // SAFETY: the arguments are add4's parameters; a, b and c hold ADD4_N floats,
            // the grid covers ADD4_N threads, the kernel skips i >= n; the stream is
            // synchronized before the host reads c.
            unsafe {
                kernel.launch(
                    stream,
                    &add4_cfg,
                    (&a.as_view(), &b.as_view(), &mut c.as_view_mut(), &*n),
                )?
            };
            stream.synchronize()?;
            drop(kernel);
            drop(lib);
            Ok(())
        })
    };
    /// What one side of a row runs.
    #[derive(Clone, Copy)]
    enum Trip {
        Raw,
        RawWithQueries,
        Safe,
    }
    let name = "cuLibraryLoadData + GetKernel + first add4 launch + sync + unload";
    let rows = [
        // Against raw: no target, since the driver forces the parameter queries (the floor
        // row is what the round trip is judged against).
        (name.to_string(), None, Trip::Raw, Trip::Safe),
        // Against its floor: raw plus the 5 parameter queries (raw column), same rounds.
        (
            format!("{name} vs its floor: raw + the 5 cuKernelGetParamInfo of a first checked launch (raw column)"),
            Some(1.02),
            Trip::RawWithQueries,
            Trip::Safe,
        ),
        // What the queries alone cost: raw against raw with them (ours column). No target.
        (
            format!("{name}: raw, and raw + the 5 cuKernelGetParamInfo (ours column)"),
            None,
            Trip::Raw,
            Trip::RawWithQueries,
        ),
    ];
    for (row, target, raw_side, our_side) in rows {
        r.run(row, "ms", false, target, |side| {
            add4.clear()?;
            let trip = match side {
                Side::Raw => raw_side,
                Side::Safe => our_side,
            };
            let t = match trip {
                Trip::Raw => raw_trip(false)?,
                Trip::RawWithQueries => raw_trip(true)?,
                Trip::Safe => safe_trip(&mut add4)?,
            };
            add4.check()?;
            Ok(secs(t) * 1e3 / count as f64)
        })?;
    }
    Ok(())
}
