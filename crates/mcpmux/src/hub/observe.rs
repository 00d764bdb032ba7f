//! The observers a harness adds (`Hub::observe`): told of every call as it ends, at the call
//! seam (`Hub::carry`, hub/call.rs, where the call's span is too).

use std::sync::Arc;

use super::Hub;
use crate::telemetry::CallObserver;

impl Hub {
    /// Tells `observer` of every call this hub makes from now on, as it ends (its server,
    /// outcome, duration and sizes): the figures of the `mcpmux::call` spans, for a harness
    /// that does not use `tracing`.
    pub fn observe(&self, observer: Arc<dyn CallObserver>) {
        self.inner.observers.add(observer);
    }

    /// The wire log this hub writes every message to and from its servers to
    /// ([`HubOptions::with_wire_log`](crate::HubOptions::with_wire_log)), for a server built on
    /// the hub to log its own clients' messages beside them (`mcpmux serve`).
    pub fn wire_log(&self) -> Option<&crate::telemetry::wire::WireLog> {
        self.inner.shared.ctx.wire_log()
    }
}
