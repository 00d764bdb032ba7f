//! The ids the server makes up (tool call, message and request ids): unique in the process, so
//! also across servers. Knows nothing of either wire format.

use std::sync::atomic::{AtomicU64, Ordering};

/// The counter behind every generated id.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh id suffix: 24 characters, unique in this process.
pub(crate) fn next_id_suffix() -> String {
    let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    format!("{:0>24}", format!("mx{n:x}"))
}
