//! A line past the cap, skipped to its end: the request it answers fails at once with the
//! reason ("answer over 64 MiB"), not at its deadline. Which request, its two ends say
//! (`transport/oversize.rs`); when they name none, every request of this server in flight
//! fails, rmcp's and the direct calls alike: one of them was answered, and nothing says which.
//! An rmcp request fails through an error answer for its id handed to rmcp in the line's
//! place; a direct call through its waiter.

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, ServiceError};
use tokio::io::AsyncRead;

use super::{Item, LineReader, oversize};

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// The line whose ends are `skipped` was over `max_line` and was skipped.
    pub(super) fn skipped(&mut self, skipped: &oversize::Skipped) {
        let reason = oversize::reason(self.max_line);
        match skipped.verdict() {
            oversize::Verdict::FromServer => {
                tracing::warn!(server = %self.server, "dropping a message of the server's: {reason}");
            }
            oversize::Verdict::Answers(id) => {
                tracing::warn!(server = %self.server, %id, "failing the request: {reason}");
                crate::sync::lock(&self.tool_calls).answered(&id);
                let failure = oversize::error(self.max_line);
                self.push(RxJsonRpcMessage::<RoleClient>::error(failure, Some(id)));
            }
            oversize::Verdict::Unknown => {
                tracing::warn!(server = %self.server, "failing every request in flight (the answer names none): {reason}");
                self.fail_all();
            }
        }
    }

    /// Fails every request awaited: rmcp's through an error answer each, the direct calls
    /// through their waiters.
    fn fail_all(&mut self) {
        let ids: Vec<_> = {
            let mut awaited = crate::sync::lock(&self.tool_calls);
            awaited.tool_calls.clear();
            awaited.requests.drain().collect()
        };
        for id in ids {
            let failure = oversize::error(self.max_line);
            self.ready
                .push_back(Item::Message(RxJsonRpcMessage::<RoleClient>::error(
                    failure,
                    Some(id),
                )));
        }
        for waiter in self.direct.take_all() {
            let failure = oversize::error(self.max_line);
            self.ready
                .push_back(Item::Answer(waiter, Err(ServiceError::McpError(failure))));
        }
    }
}
