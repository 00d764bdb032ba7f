//! `mcpmux-testmodel`: a scripted language model behind a real HTTP endpoint on 127.0.0.1, for
//! tests of an agent loop. It speaks one provider's wire format per server — OpenAI Chat
//! Completions or Anthropic Messages — as the providers document it, streaming (server-sent
//! events) and not, and answers each request with the next [`Step`] of its script.
//!
//! It also checks every request it receives the way the real API would (every tool call
//! answered exactly once and in the order the protocol requires, tool definitions valid for the
//! provider, required headers and fields), records each failure in
//! [`ScriptedModel::violations`] and answers it with a 400 in the provider's error format.
//!
//! This file owns the public face: [`ScriptedModel`], with [`Wire`] and [`Received`] from
//! `wire.rs`. The script is `script.rs`, the HTTP side `server.rs`, the two formats `openai.rs` and `anthropic.rs`, the
//! checks `checks/`. It knows nothing of mcpmux or of any client.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use mcpmux_testmodel::{ScriptedModel, Step, Wire};
//! let model = ScriptedModel::start(
//!     Wire::OpenAi,
//!     vec![
//!         Step::tool_calls([("get_weather", r#"{"city":"Paris"}"#)]),
//!         Step::text("It is sunny in Paris."),
//!     ],
//! )
//! .await?;
//! // point the client at model.base_url(), run it, then:
//! assert!(model.violations().is_empty(), "{:#?}", model.violations());
//! assert_eq!(model.remaining(), 0);
//! # Ok(()) }
//! ```

mod anthropic;
mod checks;
mod ids;
mod openai;
mod script;
mod server;
mod stream;
mod wire;

use std::{net::SocketAddr, sync::Arc};

pub use script::Step;
pub use wire::{Received, Wire};

/// A scripted model serving on 127.0.0.1 until dropped.
pub struct ScriptedModel {
    addr: SocketAddr,
    wire: Wire,
    shared: Arc<server::Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedModel {
    /// Binds 127.0.0.1 on a free port and serves `steps`, one per request, in order.
    pub async fn start(wire: Wire, steps: Vec<Step>) -> std::io::Result<ScriptedModel> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(server::Shared::new(wire, steps));
        let app = server::router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                // Nothing to hand the error to: the test sees the refused connections.
                let _ = error;
            }
        });
        Ok(ScriptedModel {
            addr,
            wire,
            shared,
            task,
        })
    }

    /// The base URL a client is configured with: `http://127.0.0.1:PORT/v1` for OpenAI (the
    /// client POSTs `{base}/chat/completions`), `http://127.0.0.1:PORT` for Anthropic (the
    /// client POSTs `{base}/v1/messages`).
    pub fn base_url(&self) -> String {
        match self.wire {
            Wire::OpenAi => format!("http://{}/v1", self.addr),
            Wire::Anthropic => format!("http://{}", self.addr),
        }
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Which wire format this server speaks.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.requests()
    }

    /// Every check that failed so far, each naming its request (`request N: …`, counted from 1).
    pub fn violations(&self) -> Vec<String> {
        self.shared.violations()
    }

    /// How many script steps have not been used yet.
    pub fn remaining(&self) -> usize {
        self.shared.remaining()
    }

    /// The tool call ids this server has issued (`call_…` or `toolu_…`), in order.
    pub fn issued_tool_call_ids(&self) -> Vec<String> {
        self.shared.issued()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("addr", &self.addr)
            .field("wire", &self.wire)
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}
