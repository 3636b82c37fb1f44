//! Kernel parameters: what a kernel takes ([`ParamInfo`]), read once and cached per kernel
//! handle, and the argument checks against it.
//!
//! The checks need no stream and no launch, so a stream launch, a graph's kernel node and an
//! update of an instantiated graph can all use them: [`KernelParams::check_args`] compares
//! the argument sizes of a launch, [`KernelParams::check_packed`] the layout of a packed
//! parameter buffer.
//!
//! # Where the parameter list comes from
//!
//! The driver reports one parameter at a time (`cuFuncGetParamInfo` / `cuKernelGetParamInfo`,
//! CUDA 12.4) and has no call that says how many there are (CUDA 13.0). So a kernel's list is
//! read at its first checked launch, once per kernel handle, and cached: the driver is asked
//! for parameters by index until it answers `CUDA_ERROR_INVALID_VALUE`. Loading a module or a
//! library reads nothing of the kind, so that it costs what the driver's load costs.
//!
//! That one failed call per kernel is what tools such as compute-sanitizer report as an API
//! error. A process that wants none sets [`set_param_source`]`(`[`ParamSource::Image`]`)`:
//! the safe loaders then read each kernel's parameter count from the image while loading
//! (see [`crate::image`]; PTX also tells offsets and sizes, so its kernels ask the driver
//! nothing), and a checked launch asks for exactly that many. Where the count is unknown even
//! then (a handle from `from_raw`, a compressed fatbin, an image loaded through a bare
//! pointer) the driver is probed as above.
//!
//! # Drivers older than CUDA 12.4
//!
//! They cannot report parameters at all. A checked launch then fails with
//! [`Error::Unsupported`] naming the query function, unless the process opts in to
//! unchecked launches with [`set_argument_check`]`(`[`ArgumentCheck::WhenSupported`]`)`; then
//! such launches go unchecked and the crate says so once through [`log::warn!`].

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use cuda_driver_sys as sys;

use crate::error::launch::LaunchError;
use crate::error::{check, Error, Result};
use crate::image::{Image, ParamCounts};
use crate::types::ErrorCode;

/// Where a kernel parameter lives in the device-side parameter layout, as the driver reports
/// it (`cuFuncGetParamInfo`, `cuKernelGetParamInfo`) and as
/// [`ParamBuffer`](crate::launch::ParamBuffer) places it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamInfo {
    /// Offset in bytes from the start of the parameters.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// What a checked launch does when the driver cannot report a kernel's parameters (a driver
/// older than CUDA 12.4); see [`set_argument_check`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArgumentCheck {
    /// A checked launch that cannot check fails with [`Error::Unsupported`] (the default).
    #[default]
    Required,
    /// A checked launch that cannot check launches unchecked; the first such launch in the
    /// process logs a warning through [`log::warn!`].
    WhenSupported,
}

static POLICY: AtomicU8 = AtomicU8::new(0);
static WARNED: AtomicBool = AtomicBool::new(false);

/// Sets, for the whole process, what a checked launch does when the driver cannot report a
/// kernel's parameters (a driver older than CUDA 12.4). The default,
/// [`ArgumentCheck::Required`], makes such a launch fail with [`Error::Unsupported`];
/// [`ArgumentCheck::WhenSupported`] lets it go unchecked, as the unchecked launches do.
///
/// ```
/// use cuda_driver::{launch::argument_check, launch::set_argument_check, launch::ArgumentCheck};
/// assert_eq!(argument_check(), ArgumentCheck::Required);
/// // This program runs on old drivers too, where its launches cannot be checked.
/// set_argument_check(ArgumentCheck::WhenSupported);
/// # set_argument_check(ArgumentCheck::Required);
/// ```
pub fn set_argument_check(policy: ArgumentCheck) {
    let v = match policy {
        ArgumentCheck::Required => 0,
        ArgumentCheck::WhenSupported => 1,
    };
    POLICY.store(v, Ordering::Relaxed);
}

/// The process's current [`ArgumentCheck`] policy (see [`set_argument_check`]).
pub fn argument_check() -> ArgumentCheck {
    match POLICY.load(Ordering::Relaxed) {
        0 => ArgumentCheck::Required,
        _ => ArgumentCheck::WhenSupported,
    }
}

/// Where the safe loaders learn the kernels' parameter lists from; see [`set_param_source`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParamSource {
    /// From the driver, at each kernel's first checked launch (the default): a load reads
    /// nothing from the image but its check; the first checked launch of a kernel asks the
    /// driver for each parameter and once past the last (`CUDA_ERROR_INVALID_VALUE`, which
    /// compute-sanitizer reports as an API error, and a CUDA 12.9+ driver records in its error
    /// log, see [`LogForwarder`](crate::logs::LogForwarder)).
    #[default]
    Driver,
    /// From the image, while loading: every kernel's parameter declarations are read when a
    /// module or library is loaded (tens of microseconds for a large PTX), so that a checked
    /// launch asks the driver for exactly that many parameters (PTX: none) and no driver call
    /// fails. PTX kernels are then checked on drivers older than CUDA 12.4 too, which cannot
    /// report parameters.
    Image,
}

static SOURCE: AtomicU8 = AtomicU8::new(0);

/// Sets, for the whole process, where the safe loaders learn the kernels' parameter lists
/// from (see [`ParamSource`]). It changes when the list is read and what that costs, never
/// what a checked launch accepts. Loads made before the call keep what they read.
///
/// ```
/// use cuda_driver::launch::{param_source, set_param_source, ParamSource};
/// assert_eq!(param_source(), ParamSource::Driver);
/// // Under compute-sanitizer: no probing call past the last parameter.
/// set_param_source(ParamSource::Image);
/// # set_param_source(ParamSource::Driver);
/// ```
pub fn set_param_source(source: ParamSource) {
    let v = match source {
        ParamSource::Driver => 0,
        ParamSource::Image => 1,
    };
    SOURCE.store(v, Ordering::Relaxed);
}

/// The process's current [`ParamSource`] (see [`set_param_source`]).
pub fn param_source() -> ParamSource {
    match SOURCE.load(Ordering::Relaxed) {
        0 => ParamSource::Driver,
        _ => ParamSource::Image,
    }
}

/// What a safe load reads of the kernels' parameters from `image`: nothing under
/// [`ParamSource::Driver`] (a checked launch asks the driver at its first use), the image's
/// counts under [`ParamSource::Image`].
pub(crate) fn counts_at_load(image: &Image<'_>) -> Option<Arc<ParamCounts>> {
    match param_source() {
        ParamSource::Driver => None,
        ParamSource::Image => image.param_counts(),
    }
}

/// What a checked launch does when the parameter list is unknown, under `policy`: an error,
/// or `Ok` after a warning (logged once per process).
#[cold]
#[inline(never)]
#[track_caller]
fn unchecked(policy: ArgumentCheck, call: &'static str, kernel: &str) -> Result<()> {
    let driver = crate::init::driver_version_raw().unwrap_or(0);
    match policy {
        ArgumentCheck::Required => Err(Error::Unsupported {
            function: call,
            needs: 12040,
            driver,
        }),
        ArgumentCheck::WhenSupported => {
            if !WARNED.swap(true, Ordering::Relaxed) {
                log::warn!(
                    target: "cuda_driver",
                    "kernel arguments cannot be checked on this driver ({call} needs CUDA 12.4, \
                     the driver is {}.{}); launches of `{kernel}` and others proceed unchecked \
                     (ArgumentCheck::WhenSupported)",
                    driver / 1000,
                    driver % 1000 / 10
                );
            }
            Ok(())
        }
    }
}

/// The name and parameter list of one kernel handle, cached: the name it was looked up by
/// (or the driver's), the parameter counts its image told (shared by the handles of one
/// module or library), the list read from the driver on first use, and the last argument
/// sizes that passed the check.
#[derive(Default)]
pub(crate) struct ParamCache {
    name: OnceLock<Box<str>>,
    counts: Option<Arc<ParamCounts>>,
    params: OnceLock<ParamList>,
    /// The address of the last `&'static` size list (`KernelArgs::SIZES`) that passed
    /// [`KernelParams::check_args`] against `params`, or null. A `'static` list at one address
    /// never changes, so a list at that address with the parameters' length passes again:
    /// the check is then one comparison whatever the parameter count.
    passed_sizes: AtomicPtr<usize>,
}

impl Clone for ParamCache {
    fn clone(&self) -> Self {
        ParamCache {
            name: self.name.clone(),
            counts: self.counts.clone(),
            params: self.params.clone(),
            passed_sizes: AtomicPtr::new(self.passed_sizes.load(Ordering::Relaxed)),
        }
    }
}

/// A parameter list read once, with an identity no other list read in the process has, so
/// that a [`ParamBuffer`](crate::launch::ParamBuffer) can remember which list its layout
/// matched (see [`KernelParams::param_list_id`]).
#[derive(Clone)]
struct ParamList {
    /// Unique in the process, from [`NEXT_LIST_ID`]; never 0.
    id: u64,
    /// `None`: the driver cannot report parameters.
    list: Option<Box<[ParamInfo]>>,
}

/// The identity of the next parameter list read.
static NEXT_LIST_ID: AtomicU64 = AtomicU64::new(1);

impl ParamList {
    fn new(list: Option<Box<[ParamInfo]>>) -> ParamList {
        ParamList {
            id: NEXT_LIST_ID.fetch_add(1, Ordering::Relaxed),
            list,
        }
    }
}

impl ParamCache {
    /// The cache of a kernel looked up by `name` in an image with `counts`.
    pub(crate) fn named(name: &str, counts: Option<Arc<ParamCounts>>) -> ParamCache {
        ParamCache {
            name: OnceLock::from(Box::<str>::from(name)),
            counts,
            params: OnceLock::new(),
            passed_sizes: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The cache of a kernel whose name is asked from the driver when needed.
    pub(crate) fn unnamed(counts: Option<Arc<ParamCounts>>) -> ParamCache {
        ParamCache {
            name: OnceLock::new(),
            counts,
            params: OnceLock::new(),
            passed_sizes: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The name if it is known without asking the driver.
    pub(crate) fn known_name(&self) -> Option<&str> {
        self.name.get().map(|s| &**s)
    }
}

/// A kernel handle whose parameters can be checked: a [`Function`](crate::Function) or a
/// [`Kernel`](crate::Kernel). The provided methods are the checks.
pub(crate) trait KernelParams {
    /// The driver's parameter query, named in errors (`"cuFuncGetParamInfo"`).
    const PARAM_INFO_CALL: &'static str;

    /// The handle's cache.
    fn param_cache(&self) -> &ParamCache;

    /// Whether the driver has the parameter query: [`Error::Unsupported`] when it has not.
    fn param_query_available(&self) -> Result<()>;

    /// What keeps the context the parameter queries need current while a list is read.
    type QueryScope<'a>
    where
        Self: 'a;

    /// Makes current the context the parameter queries need, once for a whole list.
    fn enter_for_queries(&self) -> Result<Self::QueryScope<'_>>;

    /// Parameter `index` from the driver: `(result, offset, size)`, inside the scope of
    /// [`enter_for_queries`](Self::enter_for_queries). `Err` when the driver has no such
    /// query ([`Error::Unsupported`]).
    fn query_param(&self, index: usize) -> Result<(sys::CUresult, usize, usize)>;

    /// The kernel's name from the driver (`cuFuncGetName` / `cuKernelGetName`).
    fn driver_name(&self) -> Option<String>;

    /// The raw handle, to name an unnamed kernel in messages.
    fn raw_handle(&self) -> *mut c_void;

    /// The kernel's name: the one it was looked up by, or the driver's, cached.
    fn kernel_name(&self) -> &str {
        self.param_cache().name.get_or_init(|| {
            self.driver_name()
                .unwrap_or_else(|| format!("<kernel {:p}>", self.raw_handle()))
                .into_boxed_str()
        })
    }

    /// The parameter list, read on first use and cached; `None` when the driver cannot
    /// report it.
    #[inline]
    #[track_caller]
    fn params(&self) -> Result<Option<&[ParamInfo]>> {
        match self.param_cache().params.get() {
            Some(p) => Ok(p.list.as_deref()),
            None => self.init_params(),
        }
    }

    /// The identity of the parameter list once it is read and known (unique in the
    /// process: equal identities mean equal lists), 0 before or when the driver cannot
    /// report it.
    #[inline]
    fn param_list_id(&self) -> u64 {
        match self.param_cache().params.get() {
            Some(ParamList { id, list: Some(_) }) => *id,
            _ => 0,
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn init_params(&self) -> Result<Option<&[ParamInfo]>> {
        let cache = self.param_cache();
        // PTX declares every parameter's offset and size: no driver call needed.
        if let Some(layout) = cache
            .counts
            .as_ref()
            .and_then(|c| c.layout(self.kernel_name()))
        {
            let params = layout
                .iter()
                .map(|&(offset, size)| ParamInfo {
                    offset: offset as usize,
                    size: size as usize,
                })
                .collect();
            return Ok(cache
                .params
                .get_or_init(|| ParamList::new(Some(params)))
                .list
                .as_deref());
        }
        let count = cache
            .counts
            .as_ref()
            .and_then(|c| c.get(self.kernel_name()))
            .map(|n| n as usize);
        let read = self.param_query_available().and_then(|()| {
            let _scope = self.enter_for_queries()?;
            read_param_list(Self::PARAM_INFO_CALL, count, |i| self.query_param(i))
        });
        let params = match read {
            Ok(p) => Some(p),
            Err(e) if cannot_report_params(&e) => None,
            Err(e) => return Err(e),
        };
        Ok(cache
            .params
            .get_or_init(|| ParamList::new(params))
            .list
            .as_deref())
    }

    /// Checks the sizes of a launch's arguments against the parameter list: nothing on
    /// success after the first call but a few comparisons.
    #[inline]
    #[track_caller]
    fn check_args(&self, sizes: &'static [usize]) -> Result<()> {
        match self.params()? {
            Some(params) => {
                // These very sizes passed before (see `ParamCache::passed_sizes`).
                let passed = &self.param_cache().passed_sizes;
                if params.len() == sizes.len()
                    && passed.load(Ordering::Relaxed) == sizes.as_ptr().cast_mut()
                {
                    return Ok(());
                }
                // Every size compared, without a branch per parameter (a fold of the
                // differences, which the compiler vectorises): the launch path of 64 arguments.
                if params.len() != sizes.len()
                    || params
                        .iter()
                        .zip(sizes)
                        .fold(0, |diff, (p, &s)| diff | (p.size ^ s))
                        != 0
                {
                    return Err(argument_error(self.kernel_name(), params, sizes).into());
                }
                passed.store(sizes.as_ptr().cast_mut(), Ordering::Relaxed);
                Ok(())
            }
            None => unchecked(argument_check(), Self::PARAM_INFO_CALL, self.kernel_name()),
        }
    }

    /// Checks a packed parameter buffer's layout (offset and size of each parameter, in
    /// order) against the parameter list.
    #[inline]
    #[track_caller]
    fn check_packed<I>(&self, layout: I) -> Result<()>
    where
        I: ExactSizeIterator<Item = ParamInfo> + Clone,
    {
        match self.params()? {
            Some(params) => {
                // As in check_args: the differences folded, no branch per parameter.
                if params.len() != layout.len()
                    || layout.clone().zip(params).fold(0, |diff, (a, b)| {
                        diff | (a.offset ^ b.offset) | (a.size ^ b.size)
                    }) != 0
                {
                    return Err(packed_error(self.kernel_name(), params, layout).into());
                }
                Ok(())
            }
            None => unchecked(argument_check(), Self::PARAM_INFO_CALL, self.kernel_name()),
        }
    }
}

/// Whether a failed parameter query means the driver cannot report parameters at all.
fn cannot_report_params(e: &Error) -> bool {
    matches!(e, Error::Unsupported { .. }) || e.code() == Some(ErrorCode::NOT_SUPPORTED)
}

/// The upper bound of the probing loop (the driver's parameter space is at most 32764 bytes,
/// so no kernel has more parameters).
const MAX_QUERIED_PARAMS: usize = 32768;

/// Reads a parameter list from the driver: exactly `count` parameters when the count is
/// known, else by index until the driver answers `CUDA_ERROR_INVALID_VALUE`. A known count
/// that is too high ends at that answer too.
#[cold]
#[track_caller]
pub(crate) fn read_param_list(
    call: &'static str,
    count: Option<usize>,
    mut get: impl FnMut(usize) -> Result<(sys::CUresult, usize, usize)>,
) -> Result<Box<[ParamInfo]>> {
    let bound = count.unwrap_or(MAX_QUERIED_PARAMS);
    let mut list = Vec::with_capacity(count.unwrap_or(0));
    for index in 0..bound {
        let (r, offset, size) = get(index)?;
        match check(r, call) {
            Ok(()) => list.push(ParamInfo { offset, size }),
            Err(e) if e.code() == Some(ErrorCode::INVALID_VALUE) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(list.into_boxed_slice())
}

#[cold]
#[inline(never)]
fn argument_error(kernel: &str, params: &[ParamInfo], sizes: &[usize]) -> LaunchError {
    let kernel = kernel.to_owned();
    if params.len() != sizes.len() {
        return LaunchError::ArgumentCount {
            kernel,
            expected: params.len(),
            actual: sizes.len(),
        };
    }
    let (index, (p, &actual)) = params
        .iter()
        .zip(sizes)
        .enumerate()
        .find(|(_, (p, &s))| p.size != s)
        .unwrap_or((0, (&params[0], &sizes[0])));
    LaunchError::ArgumentSize {
        kernel,
        index,
        expected: p.size,
        actual,
    }
}

#[cold]
#[inline(never)]
fn packed_error(
    kernel: &str,
    params: &[ParamInfo],
    layout: impl ExactSizeIterator<Item = ParamInfo>,
) -> LaunchError {
    let kernel = kernel.to_owned();
    if params.len() != layout.len() {
        return LaunchError::ArgumentCount {
            kernel,
            expected: params.len(),
            actual: layout.len(),
        };
    }
    let mismatch = params
        .iter()
        .zip(layout)
        .enumerate()
        .find(|(_, (p, b))| *p != b);
    match mismatch {
        Some((index, (p, b))) if p.size != b.size => LaunchError::ArgumentSize {
            kernel,
            index,
            expected: p.size,
            actual: b.size,
        },
        Some((index, (p, b))) => LaunchError::ArgumentOffset {
            kernel,
            index,
            expected: p.offset,
            actual: b.offset,
        },
        // Unreachable: called on a mismatch. Report the count, which is all that is left.
        None => LaunchError::ArgumentCount {
            kernel,
            expected: params.len(),
            actual: params.len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::ptr;

    fn p(offset: usize, size: usize) -> ParamInfo {
        ParamInfo { offset, size }
    }

    /// A kernel whose driver reports `params` (or nothing, for `None`), counting the queries
    /// and the failed ones.
    struct Fake {
        cache: ParamCache,
        params: Option<Vec<ParamInfo>>,
        queries: Cell<usize>,
        failed: Cell<usize>,
    }

    impl Fake {
        fn new(cache: ParamCache, params: Option<Vec<ParamInfo>>) -> Fake {
            Fake {
                cache,
                params,
                queries: Cell::new(0),
                failed: Cell::new(0),
            }
        }
    }

    impl KernelParams for Fake {
        const PARAM_INFO_CALL: &'static str = "cuFakeGetParamInfo";
        type QueryScope<'a> = ();
        fn enter_for_queries(&self) -> Result<()> {
            Ok(())
        }
        fn param_cache(&self) -> &ParamCache {
            &self.cache
        }
        fn param_query_available(&self) -> Result<()> {
            match self.params {
                Some(_) => Ok(()),
                None => Err(Error::Unsupported {
                    function: "cuFakeGetParamInfo",
                    needs: 12040,
                    driver: 12000,
                }),
            }
        }
        fn query_param(&self, index: usize) -> Result<(sys::CUresult, usize, usize)> {
            let params = self
                .params
                .as_ref()
                .expect("checked by param_query_available");
            self.queries.set(self.queries.get() + 1);
            match params.get(index) {
                Some(p) => Ok((sys::CUDA_SUCCESS, p.offset, p.size)),
                None => {
                    self.failed.set(self.failed.get() + 1);
                    Ok((sys::CUDA_ERROR_INVALID_VALUE, 0, 0))
                }
            }
        }
        fn driver_name(&self) -> Option<String> {
            Some("from_the_driver".into())
        }
        fn raw_handle(&self) -> *mut c_void {
            ptr::null_mut()
        }
    }

    fn saxpy() -> Vec<ParamInfo> {
        vec![p(0, 8), p(8, 4)]
    }

    #[test]
    fn argument_errors_name_the_position_and_sizes() {
        let fake = Fake::new(ParamCache::named("saxpy", None), Some(saxpy()));
        assert!(fake.check_args(&[8, 4]).is_ok());
        assert_eq!(fake.params().unwrap().unwrap(), &saxpy()[..]);
        match fake.check_args(&[8]).unwrap_err() {
            Error::Launch(LaunchError::ArgumentCount {
                kernel,
                expected,
                actual,
            }) => assert_eq!((kernel.as_str(), expected, actual), ("saxpy", 2, 1)),
            e => panic!("{e}"),
        }
        match fake.check_args(&[8, 8]).unwrap_err() {
            Error::Launch(LaunchError::ArgumentSize {
                kernel,
                index,
                expected,
                actual,
            }) => assert_eq!(
                (kernel.as_str(), index, expected, actual),
                ("saxpy", 1, 4, 8)
            ),
            e => panic!("{e}"),
        }
        assert!(fake.check_packed(saxpy().into_iter()).is_ok());
        assert!(matches!(
            fake.check_packed([p(0, 4), p(4, 4)].into_iter()),
            Err(Error::Launch(LaunchError::ArgumentSize { index: 0, .. }))
        ));
        match fake.check_packed([p(0, 8), p(12, 4)].into_iter()) {
            Err(Error::Launch(LaunchError::ArgumentOffset {
                index: 1,
                expected: 8,
                actual: 12,
                ..
            })) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            fake.check_packed([p(0, 8)].into_iter()),
            Err(Error::Launch(LaunchError::ArgumentCount {
                expected: 2,
                actual: 1,
                ..
            }))
        ));
        let unnamed = Fake::new(ParamCache::unnamed(None), Some(vec![]));
        assert_eq!(unnamed.kernel_name(), "from_the_driver");
    }

    /// The memo of passed sizes answers only for the very list that passed: another list of
    /// the same length but other sizes is still compared (and refused), a list with the same
    /// sizes elsewhere is compared (and passes), and a clone of the cache keeps the memo.
    #[test]
    fn passed_sizes_are_remembered_by_address_and_never_stand_for_other_sizes() {
        static GOOD: [usize; 2] = [8, 4];
        static BAD: [usize; 2] = [8, 8];
        static GOOD_ELSEWHERE: [usize; 2] = [8, 4];
        static SHORT: [usize; 1] = [8];
        let fake = Fake::new(ParamCache::named("saxpy", None), Some(saxpy()));
        for _ in 0..3 {
            fake.check_args(&GOOD).unwrap();
            assert_eq!(
                fake.cache.passed_sizes.load(Ordering::Relaxed),
                GOOD.as_ptr().cast_mut()
            );
            assert!(matches!(
                fake.check_args(&BAD),
                Err(Error::Launch(LaunchError::ArgumentSize { index: 1, .. }))
            ));
            assert!(matches!(
                fake.check_args(&SHORT),
                Err(Error::Launch(LaunchError::ArgumentCount { .. }))
            ));
            // A refusal leaves the memo alone.
            assert_eq!(
                fake.cache.passed_sizes.load(Ordering::Relaxed),
                GOOD.as_ptr().cast_mut()
            );
        }
        // A prefix of a list that passed starts at the same address: its length tells it apart.
        let long = Fake::new(ParamCache::named("one", None), Some(vec![p(0, 8)]));
        long.check_args(&SHORT).unwrap();
        let prefix: &'static [usize] = &GOOD[..1];
        assert!(matches!(
            fake.check_args(prefix),
            Err(Error::Launch(LaunchError::ArgumentCount { .. }))
        ));
        fake.check_args(&GOOD_ELSEWHERE).unwrap();
        let clone = Fake::new(fake.cache.clone(), Some(saxpy()));
        assert_eq!(
            clone.cache.passed_sizes.load(Ordering::Relaxed),
            GOOD_ELSEWHERE.as_ptr().cast_mut()
        );
        assert!(clone.check_args(&BAD).is_err());
        // The clone asked the driver nothing: the list came with the cache.
        assert_eq!(clone.queries.get(), 0);
    }

    /// Every list read gets its own identity, which a clone of the cache shares and which a
    /// list the driver cannot report does not have (0).
    #[test]
    fn parameter_lists_have_identities_of_their_own() {
        let a = Fake::new(ParamCache::named("a", None), Some(saxpy()));
        let b = Fake::new(ParamCache::named("b", None), Some(saxpy()));
        assert_eq!(a.param_list_id(), 0, "nothing read yet");
        a.params().unwrap();
        b.params().unwrap();
        assert_ne!(a.param_list_id(), 0);
        assert_ne!(a.param_list_id(), b.param_list_id());
        let a2 = Fake::new(a.cache.clone(), Some(saxpy()));
        assert_eq!(a2.param_list_id(), a.param_list_id());
        let none = Fake::new(ParamCache::named("old", None), None);
        assert!(none.params().unwrap().is_none());
        assert_eq!(none.param_list_id(), 0);
    }

    #[test]
    fn a_known_count_asks_exactly_that_many() {
        let mut counts = crate::image::CountsBuilder::default();
        counts.insert("saxpy", Some(2));
        let counts = counts.build();
        let fake = Fake::new(ParamCache::named("saxpy", counts.clone()), Some(saxpy()));
        assert_eq!(fake.params().unwrap().unwrap(), &saxpy()[..]);
        assert_eq!((fake.queries.get(), fake.failed.get()), (2, 0));
        // Cached: no more queries.
        fake.check_args(&[8, 4]).unwrap();
        assert_eq!(fake.queries.get(), 2);
        // Unknown (another name): probed until the driver says no, once.
        let probed = Fake::new(ParamCache::named("other", counts), Some(saxpy()));
        assert_eq!(probed.params().unwrap().unwrap(), &saxpy()[..]);
        assert_eq!((probed.queries.get(), probed.failed.get()), (3, 1));
        // An unnamed kernel looks its count up under the driver's name.
        let mut c = crate::image::CountsBuilder::default();
        c.insert("from_the_driver", Some(0));
        let none = Fake::new(ParamCache::unnamed(c.build()), Some(vec![]));
        assert_eq!(none.params().unwrap().unwrap(), &[]);
        assert_eq!(none.queries.get(), 0);
    }

    /// The only unit test that changes the process's parameter source.
    #[test]
    fn loads_read_counts_only_when_asked() {
        let ptx = ".version 8.0\n.visible .entry k(.param .u64 a)\n{ ret; }\n";
        let img = Image::check(ptx.as_bytes()).unwrap();
        let before = param_source();
        set_param_source(ParamSource::Driver);
        assert!(
            counts_at_load(&img).is_none(),
            "the default load reads nothing"
        );
        set_param_source(ParamSource::Image);
        assert_eq!(counts_at_load(&img).unwrap().get("k"), Some(1));
        set_param_source(before);
    }

    #[test]
    fn a_count_too_high_ends_where_the_driver_does() {
        let list = read_param_list("cuFake", Some(5), |i| {
            Ok(if i < 2 {
                (sys::CUDA_SUCCESS, i * 8, 8)
            } else {
                (sys::CUDA_ERROR_INVALID_VALUE, 0, 0)
            })
        })
        .unwrap();
        assert_eq!(&*list, &[p(0, 8), p(8, 8)]);
        let e = read_param_list("cuFake", None, |_| {
            Ok((sys::CUDA_ERROR_INVALID_HANDLE, 0, 0))
        })
        .unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::INVALID_HANDLE));
    }

    #[test]
    fn without_a_driver_query_the_policy_decides() {
        let fake = Fake::new(ParamCache::named("old", None), None);
        assert_eq!(fake.params().unwrap(), None);
        // Also when the image says the kernel has no parameters.
        let mut c = crate::image::CountsBuilder::default();
        c.insert("none", Some(0));
        let none = Fake::new(ParamCache::named("none", c.build()), None);
        assert_eq!(none.params().unwrap(), None);
        // The policy logic itself, without touching the process-wide setting.
        match unchecked(ArgumentCheck::Required, "cuFuncGetParamInfo", "old") {
            Err(Error::Unsupported {
                function, needs, ..
            }) => assert_eq!((function, needs), ("cuFuncGetParamInfo", 12040)),
            other => panic!("{other:?}"),
        }
        assert!(unchecked(ArgumentCheck::WhenSupported, "cuFuncGetParamInfo", "old").is_ok());
        assert!(WARNED.load(Ordering::Relaxed));
        assert!(unchecked(ArgumentCheck::WhenSupported, "cuFuncGetParamInfo", "old").is_ok());
        // The default is an error; the setting round-trips.
        assert_eq!(ArgumentCheck::default(), ArgumentCheck::Required);
        let before = argument_check();
        set_argument_check(ArgumentCheck::WhenSupported);
        assert_eq!(argument_check(), ArgumentCheck::WhenSupported);
        set_argument_check(before);
    }
}
