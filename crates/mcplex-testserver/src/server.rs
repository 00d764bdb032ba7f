//! The MCP server itself: rmcp's `ServerHandler` for the test tools.
//!
//! Owns what the server says about itself (info, capabilities, protocol versions per era),
//! `tools/list` pagination, and the order of events around every `tools/call` (call log, crash
//! faults, dispatch, answer delay). The tools live in `tools`; transports know nothing of this.

#![allow(deprecated)] // Logging is SEP-2577-deprecated in rmcp, yet part of the handshake era.

use std::{
    borrow::Cow,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::tool::{ToolCallContext, ToolRouter},
    model::{
        CallToolRequestParams, CallToolResponse, DiscoverResult, ErrorCode, Implementation,
        ListToolsResult, LoggingLevel, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
        ServerConfig, SetLevelRequestParams, Tool,
    },
    service::RequestContext,
};

use crate::{
    cli::Era,
    faults::{CallFaults, CallLog},
};

/// The tool that `change_tools` adds and removes.
pub const EXTRA_TOOL: &str = "extra";

/// Server-wide settings and state, shared by every session (HTTP creates one handler per
/// session or per stateless request).
#[derive(Debug)]
pub struct Shared {
    pub era: Era,
    pub protocol_version: Option<ProtocolVersion>,
    pub page_size: Option<usize>,
    pub repeat_cursor: bool,
    pub call_log: Option<CallLog>,
    pub faults: CallFaults,
    /// Whether `extra` is currently listed (toggled by `change_tools`).
    pub extra_enabled: AtomicBool,
    pub router: ToolRouter<TestServer>,
}

/// One session's handler.
#[derive(Debug, Clone)]
pub struct TestServer {
    pub shared: Arc<Shared>,
    /// Level set by `logging/setLevel` in this session (`None`: everything is sent).
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
}

impl TestServer {
    pub fn new_session(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            log_level: Arc::default(),
        }
    }

    /// The tools currently listed, sorted by name.
    pub fn visible_tools(&self) -> Vec<Tool> {
        let extra = self.shared.extra_enabled.load(Ordering::SeqCst);
        self.shared
            .router
            .list_all()
            .into_iter()
            .filter(|tool| extra || tool.name != EXTRA_TOOL)
            .collect()
    }

    /// Whether a log message at `level` should reach this session's client.
    pub fn logs_at(&self, level: LoggingLevel, context: &RequestContext<RoleServer>) -> bool {
        // 2026-07-28 carries the level per request; the handshake era sets it per session.
        let threshold = context
            .meta
            .log_level()
            .or_else(|| match self.log_level.lock() {
                Ok(level) => *level,
                Err(poisoned) => *poisoned.into_inner(),
            });
        threshold.is_none_or(|threshold| severity(level) >= severity(threshold))
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The versions this server accepts, per era and `--protocol-version`.
///
/// rmcp negotiates `initialize` against this list *after* the handler answered: a client
/// version in the list is echoed back whatever `initialize` returned, so forcing an answer
/// (`--protocol-version V`) means listing only V among the handshake versions.
pub fn supported_versions(era: Era, forced: Option<&ProtocolVersion>) -> Vec<ProtocolVersion> {
    let handshake: Vec<ProtocolVersion> = match forced {
        Some(version) => vec![version.clone()],
        None => ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE).to_vec(),
    };
    match era {
        Era::Handshake => handshake,
        Era::Stateless => vec![ProtocolVersion::V_2026_07_28],
        Era::Both => {
            let mut versions = handshake;
            versions.push(ProtocolVersion::V_2026_07_28);
            versions
        }
    }
}

/// One page of `tools/list`: the index range to return and the next cursor.
///
/// Cursors are opaque to clients (`page-OFFSET`); an unknown cursor is an invalid-params error.
/// With `repeat`, every page names the same next cursor, forever.
pub fn page(
    total: usize,
    page_size: Option<usize>,
    repeat: bool,
    cursor: Option<&str>,
) -> Result<(std::ops::Range<usize>, Option<String>), ErrorData> {
    let Some(size) = page_size.filter(|size| *size > 0) else {
        return Ok((0..total, None));
    };
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix("page-")
            .and_then(|offset| offset.parse::<usize>().ok())
            .filter(|offset| *offset <= total)
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor `{cursor}`"), None))?,
    };
    let end = start.saturating_add(size).min(total);
    let next = if repeat {
        Some(format!("page-{}", size.min(total)))
    } else {
        (end < total).then(|| format!("page-{end}"))
    };
    Ok((start..end, next))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let protocol_version = match self.shared.era {
            Era::Stateless => ProtocolVersion::V_2026_07_28,
            Era::Both | Era::Handshake => self
                .shared
                .protocol_version
                .clone()
                .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        ServerConfig::new(capabilities)
            .with_protocol_version(protocol_version)
            .with_server_info(Implementation::new(
                "mcplex-testserver",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("Test server for mcplex: tools with fault knobs.")
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(supported_versions(
            self.shared.era,
            self.shared.protocol_version.as_ref(),
        ))
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // The gate already answers discover in the handshake era; this covers any path that
        // reaches the handler anyway.
        if self.shared.era == Era::Handshake {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            ));
        }
        Ok(DiscoverResult::from_server_info(
            supported_versions(self.shared.era, self.shared.protocol_version.as_ref()),
            self.get_info(),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match self.log_level.lock() {
            Ok(mut level) => *level = Some(request.level),
            Err(poisoned) => *poisoned.into_inner() = Some(request.level),
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.visible_tools();
        let cursor = request.as_ref().and_then(|params| params.cursor.as_deref());
        let (range, next_cursor) = page(
            tools.len(),
            self.shared.page_size,
            self.shared.repeat_cursor,
            cursor,
        )?;
        tools.truncate(range.end);
        let tools = tools.split_off(range.start);
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if name == EXTRA_TOOL && !self.shared.extra_enabled.load(Ordering::SeqCst) {
            return None;
        }
        self.shared.router.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(log) = &self.shared.call_log {
            log.record(&request.name, request.arguments.as_ref());
        }
        self.shared.faults.before_call(&request.name);
        let cancelled = context.ct.clone();
        let result =
            if request.name == EXTRA_TOOL && !self.shared.extra_enabled.load(Ordering::SeqCst) {
                // Exactly what rmcp's router answers for a tool it does not have.
                Err(ErrorData::invalid_params("tool not found", None))
            } else {
                self.shared
                    .router
                    .call(ToolCallContext::new(self, request, context))
                    .await
            };
        self.shared.faults.after_call(&cancelled).await;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_per_era() {
        let both = supported_versions(Era::Both, None);
        assert_eq!(both.first(), Some(&ProtocolVersion::V_2024_11_05));
        assert_eq!(both.last(), Some(&ProtocolVersion::V_2026_07_28));
        assert!(!supported_versions(Era::Handshake, None).contains(&ProtocolVersion::V_2026_07_28));
        assert_eq!(
            supported_versions(Era::Stateless, None),
            [ProtocolVersion::V_2026_07_28]
        );
        assert_eq!(
            supported_versions(Era::Handshake, Some(&ProtocolVersion::V_2024_11_05)),
            [ProtocolVersion::V_2024_11_05]
        );
    }

    #[test]
    fn pages_walk_to_the_end() {
        assert_eq!(page(5, None, false, None), Ok((0..5, None)));
        assert_eq!(
            page(5, Some(2), false, None),
            Ok((0..2, Some("page-2".into())))
        );
        assert_eq!(
            page(5, Some(2), false, Some("page-2")),
            Ok((2..4, Some("page-4".into())))
        );
        assert_eq!(page(5, Some(2), false, Some("page-4")), Ok((4..5, None)));
        assert!(page(5, Some(2), false, Some("bogus")).is_err());
        assert!(page(5, Some(2), false, Some("page-9")).is_err());
    }

    #[test]
    fn repeated_cursor_never_ends() {
        for cursor in [None, Some("page-2")] {
            let Ok((_, next)) = page(5, Some(2), true, cursor) else {
                panic!("a valid cursor");
            };
            assert_eq!(next.as_deref(), Some("page-2"));
        }
    }
}
