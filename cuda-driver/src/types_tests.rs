//! Unit tests of the generated [`types`](crate::types) (no GPU).

use cuda_driver_sys as sys;

use crate::types::*;

#[test]
fn enums_debug_as_their_c_name_or_the_raw_value() {
    assert_eq!(
        format!("{:?}", AddressMode::WRAP),
        "CU_TR_ADDRESS_MODE_WRAP"
    );
    assert_eq!(
        format!("{:?}", DeviceAttribute::MULTIPROCESSOR_COUNT),
        "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"
    );
    assert_eq!(
        format!("{:?}", AddressMode::from_raw(1234)),
        "AddressMode(1234)"
    );
    assert_eq!(
        format!("{:?}", ErrorCode::from_raw(123_456)),
        "ErrorCode(123456)"
    );
    assert_eq!(AddressMode::from_raw(1234).c_name(), None);
    assert_eq!(
        FilterMode::LINEAR.c_name(),
        Some("CU_TR_FILTER_MODE_LINEAR")
    );
    // A value with two names is shown by the first cuda.h gives it.
    assert_eq!(
        DeviceAttribute::SHARED_MEMORY_PER_BLOCK.c_name(),
        Some("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK")
    );
    // Signed C enums keep their sign.
    assert_eq!(SharedCarveout::DEFAULT.as_raw(), -1);
    assert_eq!(
        SharedCarveout::DEFAULT.c_name(),
        Some("CU_SHAREDMEM_CARVEOUT_DEFAULT")
    );
}

#[test]
fn enums_convert_to_and_from_raw() {
    let raw: sys::CUlimit = Limit::STACK_SIZE.into();
    assert_eq!(raw, sys::CU_LIMIT_STACK_SIZE);
    assert_eq!(Limit::from(sys::CU_LIMIT_STACK_SIZE), Limit::STACK_SIZE);
    assert_eq!(Limit::from_raw(raw).as_raw(), raw);
    const C: ArrayFormat = ArrayFormat::from_raw(sys::CU_AD_FORMAT_FLOAT);
    assert_eq!(C, ArrayFormat::FLOAT);
}

#[test]
fn constant_names_follow_the_rule() {
    // The prefix every enumerator shares goes.
    assert_eq!(
        GraphNodeType::KERNEL.as_raw(),
        sys::CU_GRAPH_NODE_TYPE_KERNEL
    );
    assert_eq!(
        MemAllocationHandleType::POSIX_FILE_DESCRIPTOR.as_raw(),
        sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    );
    assert_eq!(
        TensorMapIm2ColWideMode::W128.as_raw(),
        sys::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128
    );
    assert_eq!(DevResourceType::SM.as_raw(), sys::CU_DEV_RESOURCE_TYPE_SM);
    assert_eq!(
        OccupancyFlags::DISABLE_CACHING_OVERRIDE.as_raw(),
        sys::CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE
    );
    // One enumerator: the words of the type's name go.
    assert_eq!(
        IpcMemFlags::LAZY_ENABLE_PEER_ACCESS.as_raw(),
        sys::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
    );
    // A name that would start with a digit keeps the prefix's last word.
    assert_eq!(
        TensorMapSwizzle::SWIZZLE_32B.as_raw(),
        sys::CU_TENSOR_MAP_SWIZZLE_32B
    );
    assert_eq!(
        TensorMapDataType::TYPE_16U4_ALIGN8B.as_raw(),
        sys::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B
    );
    assert_eq!(
        Array3DFlags::ARRAY3D_2DARRAY.as_raw(),
        sys::CUDA_ARRAY3D_2DARRAY
    );
    // Constants are upper case.
    assert_eq!(
        AtomicOperationCapability::VECTOR_32X4.as_raw(),
        sys::CU_ATOMIC_CAPABILITY_VECTOR_32x4
    );
    // The names users had before the types were generated.
    assert_eq!(ErrorCode::SUCCESS.as_raw(), sys::CUDA_SUCCESS);
    assert_eq!(
        ErrorCode::OUT_OF_MEMORY.as_raw(),
        sys::CUDA_ERROR_OUT_OF_MEMORY
    );
    assert_eq!(
        CacheConfig::PREFER_L1.as_raw(),
        sys::CU_FUNC_CACHE_PREFER_L1
    );
    assert_eq!(JitTarget::COMPUTE_90A.as_raw(), sys::CU_TARGET_COMPUTE_90A);
    assert_eq!(JitInputType::PTX.as_raw(), sys::CU_JIT_INPUT_PTX);
    assert_eq!(
        JitInputType::NUM_INPUT_TYPES.as_raw(),
        sys::CU_JIT_NUM_INPUT_TYPES
    );
    assert_eq!(
        PinnedFlags::WRITECOMBINED.as_raw(),
        sys::CU_MEMHOSTALLOC_WRITECOMBINED
    );
    assert_eq!(
        HostRegisterFlags::READ_ONLY.as_raw(),
        sys::CU_MEMHOSTREGISTER_READ_ONLY
    );
    assert_eq!(
        TextureFlags::NORMALIZED_COORDINATES.as_raw(),
        sys::CU_TRSF_NORMALIZED_COORDINATES
    );
}

#[test]
fn flags_combine_and_contain() {
    let f = ContextFlags::SCHED_BLOCKING_SYNC | ContextFlags::MAP_HOST;
    assert!(f.contains(ContextFlags::MAP_HOST));
    assert!(f.contains(ContextFlags::SCHED_BLOCKING_SYNC | ContextFlags::MAP_HOST));
    assert!(!f.contains(ContextFlags::SYNC_MEMOPS));
    assert_eq!(
        f & ContextFlags::SCHED_MASK,
        ContextFlags::SCHED_BLOCKING_SYNC
    );
    assert_eq!(
        f.union(ContextFlags::SYNC_MEMOPS).as_raw(),
        0x04 | 0x08 | 0x80
    );
    assert_eq!(
        f.intersection(ContextFlags::MAP_HOST),
        ContextFlags::MAP_HOST
    );
    assert_eq!(
        f.as_raw(),
        sys::CU_CTX_SCHED_BLOCKING_SYNC | sys::CU_CTX_MAP_HOST
    );
    assert_eq!(ContextFlags::from_raw(f.as_raw()), f);
    assert_eq!(ContextFlags::default(), ContextFlags::empty());
    let mut g = PinnedFlags::empty();
    g |= PinnedFlags::DEVICEMAP;
    g.insert(PinnedFlags::PORTABLE);
    assert_eq!(g.bits(), 0x3);
    assert_eq!(u32::from(g), 0x3);
    assert_eq!(PinnedFlags::from(0x3u32), g);
    // The raw type of ProcAddressFlags is cuGetProcAddress's cuuint64_t.
    let raw: u64 = ProcAddressFlags::PER_THREAD_DEFAULT_STREAM.as_raw();
    assert_eq!(raw, 2);
}

#[test]
fn flags_iterate_by_name() {
    let f = PinnedFlags::WRITECOMBINED | PinnedFlags::PORTABLE;
    assert_eq!(
        f.iter().collect::<Vec<_>>(),
        [PinnedFlags::PORTABLE, PinnedFlags::WRITECOMBINED]
    );
    let names: Vec<&str> = f.iter_names().map(|(n, _)| n).collect();
    assert_eq!(names, ["PORTABLE", "WRITECOMBINED"]);
    // Unknown bits are kept, and come last from `iter`.
    let g = PinnedFlags::from_bits_retain(0x41);
    assert_eq!(g.as_raw(), 0x41);
    assert_eq!(
        g.iter().collect::<Vec<_>>(),
        [PinnedFlags::PORTABLE, PinnedFlags::from_raw(0x40)]
    );
    assert_eq!(PinnedFlags::from_bits(0x41), None);
    assert_eq!(PinnedFlags::from_bits_truncate(0x41), PinnedFlags::PORTABLE);
}

#[test]
fn flags_debug_by_name() {
    assert_eq!(
        format!("{:?}", ContextFlags::SCHED_SPIN | ContextFlags::MAP_HOST),
        "ContextFlags(SCHED_SPIN | MAP_HOST)"
    );
    assert_eq!(format!("{:?}", AttachFlags::GLOBAL), "AttachFlags(GLOBAL)");
    assert_eq!(format!("{:?}", PinnedFlags::empty()), "PinnedFlags(0x0)");
    assert_eq!(
        format!("{:?}", PinnedFlags::from_bits_retain(0x41)),
        "PinnedFlags(PORTABLE | 0x40)"
    );
    assert_eq!(
        format!("{:?}", PinnedFlags::from_raw(0x80)),
        "PinnedFlags(0x80)"
    );
    // A flag of several bits is named as one, not as the single-bit flags it covers.
    assert_eq!(
        format!("{:?}", MemAccessFlags::READWRITE),
        "MemAccessFlags(READWRITE)"
    );
    assert_eq!(
        format!("{:?}", MemAccessFlags::READ),
        "MemAccessFlags(READ)"
    );
    assert_eq!(
        format!(
            "{:?}",
            StreamWaitValueFlags::NOR | StreamWaitValueFlags::FLUSH
        ),
        "StreamWaitValueFlags(NOR | FLUSH)"
    );
    assert_eq!(
        format!("{:?}", StreamWaitValueFlags::EQ),
        "StreamWaitValueFlags(EQ)"
    );
    // Masks are constants, not flags of their own.
    assert_eq!(
        format!("{:?}", ContextFlags::SCHED_MASK),
        "ContextFlags(SCHED_SPIN | SCHED_YIELD | SCHED_BLOCKING_SYNC)"
    );
    assert_eq!(ContextFlags::all().as_raw(), 0xff);
}
