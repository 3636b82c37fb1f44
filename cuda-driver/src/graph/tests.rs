use super::*;
use crate::error::layout::LayoutError;
use crate::types::{GraphExecUpdateResult, GraphNodeType};

#[test]
fn edge_data_round_trips() {
    let e = EdgeData {
        from_port: 1,
        to_port: 0,
        kind: GraphDependencyType::PROGRAMMATIC,
    };
    let raw = e.to_raw();
    assert_eq!(raw.type_ as u32, GraphDependencyType::PROGRAMMATIC.as_raw());
    assert_eq!(EdgeData::from_raw(&raw), e);
    assert_eq!(EdgeData::default().kind, GraphDependencyType::DEFAULT);
}

#[test]
fn update_error_names_reason_and_node() {
    let e = Error::Graph(GraphError::Update {
        reason: GraphExecUpdateResult::ERROR_TOPOLOGY_CHANGED,
        node: 0x1234,
        from_node: 0x99,
    });
    let s = e.to_string();
    assert!(s.contains("topology"), "{s}");
    assert!(s.contains("0x1234"), "{s}");
    assert!(s.contains("0x99"), "{s}");
    let e = Error::Graph(GraphError::NodeKind {
        what: "as_memset",
        expected: GraphNodeType::MEMSET,
        found: GraphNodeType::KERNEL,
    });
    assert!(e.to_string().contains("CU_GRAPH_NODE_TYPE_KERNEL"), "{e}");
}

#[test]
fn memset_params_count_words() {
    // A view that is never dereferenced: only its address and length are read.
    // SAFETY: the handle is never passed to the driver and never dropped.
    let ctx = std::mem::ManuallyDrop::new(unsafe {
        crate::context::Context::from_raw(std::ptr::null_mut(), crate::device::Device::from_raw(0))
    });
    // SAFETY: never dereferenced.
    let v = unsafe { crate::memory::view::DeviceSliceMut::<u32>::borrow_raw(0x1000, 8, &ctx) };
    let p = MemsetParams::fill(&v, 7u8).unwrap();
    assert_eq!((p.width, p.element_size, p.value, p.height), (32, 1, 7, 1));
    let p = MemsetParams::fill(&v, 7u32).unwrap();
    assert_eq!((p.width, p.element_size), (8, 4));
    // SAFETY: never dereferenced.
    let b = unsafe { crate::memory::view::DeviceSliceMut::<u8>::borrow_raw(0x1000, 3, &ctx) };
    assert!(matches!(
        MemsetParams::fill(&b, 1u16),
        Err(Error::Layout(LayoutError::MemsetWidth { .. }))
    ));
}

#[test]
fn without_a_driver_graphs_say_so() {
    match Graph::new() {
        Ok(_) => {} // a machine with a GPU
        Err(e) => assert!(e.is_no_gpu(), "{e}"),
    }
}
