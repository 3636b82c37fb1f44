//! GPU tests: coredump settings (Coredump Attributes Control API), process-wide and per
//! context.

use cuda_driver::prelude::*;
use cuda_driver::{
    coredump::coredump_attribute_global, coredump::set_coredump_attribute_global,
    coredump::CoredumpValue, types::ContextFlags, types::CoredumpGenerationFlags,
    types::CoredumpSettings, Context, DeviceBuffer,
};

use crate::common::{note, or_skip};

/// The flags with `SKIP_SHARED_MEMORY` toggled: a value different from `f`.
fn toggled(f: CoredumpGenerationFlags) -> CoredumpGenerationFlags {
    f ^ CoredumpGenerationFlags::SKIP_SHARED_MEMORY
}

#[gpu_test]
fn coredump_settings_round_trip_globally_and_per_context() {
    // Process-wide settings: no other test may run meanwhile.
    let ctx = gpu_exclusive_or_skip!();
    let tmp = std::env::temp_dir();
    let file = tmp
        .join(format!("cuda-driver-test-core.{}", std::process::id()))
        .to_string_lossy()
        .into_owned();

    // --- Process-wide. Save everything first, restore everything last.
    let settings = [
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        CoredumpSettings::TRIGGER_HOST,
        CoredumpSettings::LIGHTWEIGHT,
        CoredumpSettings::ENABLE_USER_TRIGGER,
        CoredumpSettings::FILE,
        CoredumpSettings::PIPE,
        CoredumpSettings::GENERATION_FLAGS,
    ];
    let first = coredump_attribute_global(CoredumpSettings::ENABLE_ON_EXCEPTION);
    let first = or_skip(first, "coredump attributes need CUDA 12.1");
    let saved: Vec<(CoredumpSettings, CoredumpValue)> = settings
        .iter()
        .map(|&s| (s, coredump_attribute_global(s).unwrap()))
        .collect();
    assert_eq!(saved[0].1, first);
    for (s, v) in &saved {
        let kind_ok = match v {
            CoredumpValue::Bool(_) => !matches!(
                *s,
                CoredumpSettings::FILE
                    | CoredumpSettings::PIPE
                    | CoredumpSettings::GENERATION_FLAGS
            ),
            CoredumpValue::Path(p) => {
                matches!(*s, CoredumpSettings::FILE | CoredumpSettings::PIPE) && p.len() < 1024
            }
            CoredumpValue::Flags(_) => *s == CoredumpSettings::GENERATION_FLAGS,
        };
        assert!(kind_ok, "{s:?} read as {v:?}");
    }
    note(format!("global coredump settings: {saved:?}"));
    let restore_global = || {
        // Booleans first (the deprecated ones rewrite the flags), the flags last.
        for (s, v) in saved
            .iter()
            .filter(|(s, _)| *s != CoredumpSettings::GENERATION_FLAGS)
        {
            if matches!(v, CoredumpValue::Path(p) if p.is_empty()) {
                continue;
            }
            // ENABLE_USER_TRIGGER and PIPE were never changed.
            if matches!(
                *s,
                CoredumpSettings::ENABLE_USER_TRIGGER | CoredumpSettings::PIPE
            ) {
                continue;
            }
            set_coredump_attribute_global(*s, v).unwrap();
        }
        set_coredump_attribute_global(CoredumpSettings::GENERATION_FLAGS, &saved[6].1).unwrap();
    };

    // Each boolean: set to the other value, read it back.
    for s in [
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        CoredumpSettings::TRIGGER_HOST,
        CoredumpSettings::LIGHTWEIGHT,
    ] {
        let CoredumpValue::Bool(b) = coredump_attribute_global(s).unwrap() else {
            panic!("{s:?} is a boolean");
        };
        set_coredump_attribute_global(s, &CoredumpValue::Bool(!b)).unwrap();
        assert_eq!(
            coredump_attribute_global(s).unwrap(),
            CoredumpValue::Bool(!b),
            "{s:?}"
        );
        set_coredump_attribute_global(s, &CoredumpValue::Bool(b)).unwrap();
        assert_eq!(
            coredump_attribute_global(s).unwrap(),
            CoredumpValue::Bool(b)
        );
    }
    // The generation flags.
    let CoredumpValue::Flags(f) = saved[6].1.clone() else {
        panic!("GENERATION_FLAGS are flags");
    };
    set_coredump_attribute_global(
        CoredumpSettings::GENERATION_FLAGS,
        &CoredumpValue::Flags(toggled(f)),
    )
    .unwrap();
    assert_eq!(
        coredump_attribute_global(CoredumpSettings::GENERATION_FLAGS).unwrap(),
        CoredumpValue::Flags(toggled(f))
    );
    // The file: a new path reads back, and a context created now starts with it.
    set_coredump_attribute_global(CoredumpSettings::FILE, &CoredumpValue::Path(file.clone()))
        .unwrap();
    assert_eq!(
        coredump_attribute_global(CoredumpSettings::FILE).unwrap(),
        CoredumpValue::Path(file.clone())
    );
    let fresh = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    assert_eq!(
        fresh.coredump_attribute(CoredumpSettings::FILE).unwrap(),
        CoredumpValue::Path(file.clone()),
        "a context created after the global change inherits it"
    );
    drop(fresh);
    restore_global();
    for (s, v) in &saved {
        if matches!(v, CoredumpValue::Path(p) if p.is_empty()) {
            continue;
        }
        assert_eq!(&coredump_attribute_global(*s).unwrap(), v, "{s:?} restored");
    }

    // --- Per context (a context of our own: nothing to restore on the primary one).
    let c = Context::new(ctx.device(), ContextFlags::SCHED_AUTO).unwrap();
    let CoredumpValue::Bool(on) = c
        .coredump_attribute(CoredumpSettings::ENABLE_ON_EXCEPTION)
        .unwrap()
    else {
        panic!("ENABLE_ON_EXCEPTION is a boolean");
    };
    c.set_coredump_attribute(
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        &CoredumpValue::Bool(!on),
    )
    .unwrap();
    assert_eq!(
        c.coredump_attribute(CoredumpSettings::ENABLE_ON_EXCEPTION)
            .unwrap(),
        CoredumpValue::Bool(!on)
    );
    // The process-wide value did not move.
    assert_eq!(
        coredump_attribute_global(CoredumpSettings::ENABLE_ON_EXCEPTION).unwrap(),
        saved[0].1
    );
    c.set_coredump_attribute(
        CoredumpSettings::ENABLE_ON_EXCEPTION,
        &CoredumpValue::Bool(on),
    )
    .unwrap();
    let CoredumpValue::Flags(cf) = c
        .coredump_attribute(CoredumpSettings::GENERATION_FLAGS)
        .unwrap()
    else {
        panic!("GENERATION_FLAGS are flags");
    };
    c.set_coredump_attribute(
        CoredumpSettings::GENERATION_FLAGS,
        &CoredumpValue::Flags(toggled(cf)),
    )
    .unwrap();
    assert_eq!(
        c.coredump_attribute(CoredumpSettings::GENERATION_FLAGS)
            .unwrap(),
        CoredumpValue::Flags(toggled(cf))
    );
    let ctx_file = format!("{file}.ctx");
    c.set_coredump_attribute(
        CoredumpSettings::FILE,
        &CoredumpValue::Path(ctx_file.clone()),
    )
    .unwrap();
    assert_eq!(
        c.coredump_attribute(CoredumpSettings::FILE).unwrap(),
        CoredumpValue::Path(ctx_file)
    );
    // The primary context is unaffected by another context's settings.
    assert_ne!(
        ctx.coredump_attribute(CoredumpSettings::FILE).unwrap(),
        c.coredump_attribute(CoredumpSettings::FILE).unwrap()
    );

    // Bad input: the pipe and the user trigger cannot be set per context, MAX is no
    // setting; each is an error and the context stays usable.
    assert!(c
        .set_coredump_attribute(
            CoredumpSettings::PIPE,
            &CoredumpValue::Path(format!("{file}.pipe"))
        )
        .is_err());
    assert!(c
        .set_coredump_attribute(
            CoredumpSettings::ENABLE_USER_TRIGGER,
            &CoredumpValue::Bool(true)
        )
        .is_err());
    assert!(c
        .set_coredump_attribute(CoredumpSettings::MAX, &CoredumpValue::Bool(true))
        .is_err());
    assert!(coredump_attribute_global(CoredumpSettings::MAX).is_err());
    // The user trigger is process-wide: a context neither sets nor reports it (driver 580
    // answers CUDA_ERROR_INVALID_VALUE), and the context stays usable.
    assert!(c
        .coredump_attribute(CoredumpSettings::ENABLE_USER_TRIGGER)
        .is_err());
    let b = DeviceBuffer::from_slice(&c, &[3u32; 16]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [3; 16]);
}
