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
}
