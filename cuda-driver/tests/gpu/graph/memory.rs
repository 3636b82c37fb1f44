//! GPU tests: graph memory nodes and the device's graph memory attributes.

use cuda_driver::{graph::Graph, types::GraphInstantiateFlags, types::GraphMemAttribute};

use crate::common::stream;

#[gpu_test]
fn graph_memory_attributes() {
    let ctx = gpu_exclusive_or_skip!();
    let s = stream(&ctx);
    let dev = ctx.device();
    let g = Graph::new().unwrap();
    let (_node, alloc) = g.add_mem_alloc(&[], dev, 1 << 20).unwrap();
    let alloc_ptr = alloc.as_raw();
    let exec = g
        .instantiate(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH)
        .unwrap();
    assert!(exec
        .flags()
        .unwrap()
        .contains(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH));
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert!(
        dev.graph_mem_attribute(GraphMemAttribute::USED_MEM_CURRENT)
            .unwrap()
            >= 1 << 20
    );
    assert!(
        dev.graph_mem_attribute(GraphMemAttribute::RESERVED_MEM_HIGH)
            .unwrap()
            >= 1 << 20
    );
    // Auto-free makes the next launch possible; then free outside the graph.
    exec.launch(&s).unwrap();
    // SAFETY: the launch above allocated it; nothing uses it afterwards.
    unsafe { alloc.free_after_launch(&s).unwrap() };
    s.synchronize().unwrap();
    let _ = alloc_ptr;
    drop(exec);
    drop(g);
    let reserved = dev
        .graph_mem_attribute(GraphMemAttribute::RESERVED_MEM_CURRENT)
        .unwrap();
    // Trimming gives unused reserved memory back: never more reserved afterwards.
    dev.graph_mem_trim().unwrap();
    assert!(
        dev.graph_mem_attribute(GraphMemAttribute::RESERVED_MEM_CURRENT)
            .unwrap()
            <= reserved
    );
    // Resetting a high watermark sets it to the current value (the driver keeps memory
    // associated with graphs in its own granularity, so the current value need not be 0).
    dev.reset_graph_mem_high_watermark(GraphMemAttribute::USED_MEM_HIGH)
        .unwrap();
    let high = dev
        .graph_mem_attribute(GraphMemAttribute::USED_MEM_HIGH)
        .unwrap();
    let current = dev
        .graph_mem_attribute(GraphMemAttribute::USED_MEM_CURRENT)
        .unwrap();
    assert_eq!(high, current);
    // Only the high watermarks can be reset.
    assert!(dev
        .reset_graph_mem_high_watermark(GraphMemAttribute::USED_MEM_CURRENT)
        .is_err());
}
