//! A session's `initialize` parameters as a restore replays them (`sessions`' doc says when).

use rmcp::model::InitializeRequestParams;

/// A client's `initialize` parameters as the JSON they were read from: what a restore
/// replays. Kept as text, not as rmcp's struct (336 bytes before its strings): every idle
/// session holds one.
pub(super) struct Params(Box<serde_json::value::RawValue>);

impl Params {
    /// Them written as JSON (none if they cannot be: the session is then not restorable).
    pub(super) fn of(params: &InitializeRequestParams) -> Option<Self> {
        match serde_json::value::to_raw_value(params) {
            Ok(raw) => Some(Params(raw)),
            Err(error) => {
                tracing::debug!(%error, "a session's initialize parameters not kept");
                None
            }
        }
    }

    /// Them read back (none if they cannot be: the session is then not restorable).
    pub(super) fn read(&self) -> Option<InitializeRequestParams> {
        match serde_json::from_str(self.0.get()) {
            Ok(params) => Some(params),
            Err(error) => {
                tracing::debug!(%error, "a session's initialize parameters not read back");
                None
            }
        }
    }
}
