//! Event record and event wait nodes.

use super::*;
use crate::handle::Handle;
#[allow(unused_imports)]
use cuda_driver_macros::call;

impl Graph {
    /// Adds a node recording `event`; the graph keeps the event alive.
    #[wraps(cuGraphAddEventRecordNode)]
    #[track_caller]
    pub fn add_event_record(
        &self,
        deps: &[GraphNode<'_>],
        event: &Arc<Event>,
    ) -> Result<EventRecordNode<'_>> {
        let d = raw_deps(self, deps)?;
        let _cur = event.context().enter()?;
        self.keep(event.as_raw() as usize, || event.clone())?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: graph and event are live (the graph keeps the event).
            unsafe {
                sys::cuGraphAddEventRecordNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    event.as_raw(),
                )
            },
        )?;
        Ok(EventRecordNode(GraphNode { raw, graph: self }))
    }

    /// Adds a node waiting for `event`; the graph keeps the event alive.
    #[wraps(cuGraphAddEventWaitNode)]
    #[track_caller]
    pub fn add_event_wait(
        &self,
        deps: &[GraphNode<'_>],
        event: &Arc<Event>,
    ) -> Result<EventWaitNode<'_>> {
        let d = raw_deps(self, deps)?;
        let _cur = event.context().enter()?;
        self.keep(event.as_raw() as usize, || event.clone())?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: graph and event are live (the graph keeps the event).
            unsafe {
                sys::cuGraphAddEventWaitNode(
                    &mut raw,
                    self.raw,
                    ptr_or_null(&d),
                    d.len(),
                    event.as_raw(),
                )
            },
        )?;
        Ok(EventWaitNode(GraphNode { raw, graph: self }))
    }
}

impl<'g> EventRecordNode<'g> {
    /// The raw event the node records.
    #[wraps(cuGraphEventRecordNodeGetEvent)]
    #[track_caller]
    pub fn event_raw(&self) -> Result<sys::CUevent> {
        let mut e = ptr::null_mut();
        call!(
            // SAFETY: a live event record node; writes one handle.
            unsafe { sys::cuGraphEventRecordNodeGetEvent(self.0.raw, &mut e) },
        )?;
        Ok(e)
    }

    /// Makes the node record `event`; the graph keeps it alive.
    #[wraps(cuGraphEventRecordNodeSetEvent)]
    #[track_caller]
    pub fn set_event(&self, event: &Arc<Event>) -> Result<()> {
        let _cur = event.context().enter()?;
        self.0
            .graph
            .keep(event.as_raw() as usize, || event.clone())?;
        call!(
            // SAFETY: a live node; the graph keeps the event.
            unsafe { sys::cuGraphEventRecordNodeSetEvent(self.0.raw, event.as_raw()) },
        )
    }
}

impl<'g> EventWaitNode<'g> {
    /// The raw event the node waits for.
    #[wraps(cuGraphEventWaitNodeGetEvent)]
    #[track_caller]
    pub fn event_raw(&self) -> Result<sys::CUevent> {
        let mut e = ptr::null_mut();
        call!(
            // SAFETY: a live event wait node; writes one handle.
            unsafe { sys::cuGraphEventWaitNodeGetEvent(self.0.raw, &mut e) },
        )?;
        Ok(e)
    }

    /// Makes the node wait for `event`; the graph keeps it alive.
    #[wraps(cuGraphEventWaitNodeSetEvent)]
    #[track_caller]
    pub fn set_event(&self, event: &Arc<Event>) -> Result<()> {
        let _cur = event.context().enter()?;
        self.0
            .graph
            .keep(event.as_raw() as usize, || event.clone())?;
        call!(
            // SAFETY: a live node; the graph keeps the event.
            unsafe { sys::cuGraphEventWaitNodeSetEvent(self.0.raw, event.as_raw()) },
        )
    }
}
