//! The one error type of the library: each variant is something a harness can act on.

use std::time::Duration;

use crate::config::ConfigError;
use crate::policy::{PolicyError, Refusal};
use crate::redact::redact_text;
use crate::state::ServerState;

/// Everything that can go wrong between a harness and a tool.
///
/// A tool that answers `isError: true` is *not* an `Err`: it is a successful call whose
/// [`ToolResult`](crate::ToolResult) says the tool failed.
///
/// Its message shows every URL as [`redact_url`](crate::redact::redact_url) does (no query,
/// fragment or userinfo), the server's words and stderr included.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// A server could not be started or connected.
    #[error(
        "server `{server}`: could not connect: {}{}",
        redact_text(message),
        tail_suffix(stderr_tail)
    )]
    Connect {
        /// The server's name.
        server: String,
        /// What went wrong, in words.
        message: String,
        /// The last lines the server wrote to stderr, if any.
        stderr_tail: Vec<String>,
        /// The cause, when it is a Rust error (only its words, redacted, when they hold a
        /// URL's secret).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// OAuth failed for a server: discovery, registration, the authorization, the token
    /// store, or the server refused every token.
    #[error("server `{server}`: authorization failed: {}", redact_text(message))]
    Auth {
        /// The server's name.
        server: String,
        /// What went wrong and what to do.
        message: String,
        /// The cause, when it is a Rust error (an HTTP client's, with its URL redacted).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// Something did not answer in time.
    #[error("server `{server}`: {what} timed out after {}", fmt_duration(*after))]
    Timeout {
        /// The server's name.
        server: String,
        /// What timed out (`startup`, `tools/call echo`, ...).
        what: String,
        /// The deadline that passed.
        after: Duration,
    },

    /// The server exists but cannot take calls now.
    #[error("server `{server}` is {}: {}", state.label(), redact_text(reason))]
    Unavailable {
        /// The server's name.
        server: String,
        /// Its state when the request was refused.
        state: ServerState,
        /// Why, and what to do.
        reason: String,
    },

    /// No server of that name is configured.
    #[error("no server named `{name}` is configured")]
    UnknownServer {
        /// The name asked for.
        name: String,
    },

    /// A resource was asked for without a server, and no single server could be chosen.
    #[error("{}", no_resource_server(uri, offering))]
    NoResourceServer {
        /// The resource asked for.
        uri: String,
        /// The connected servers that offer resources (none, or several that do not list it).
        offering: Vec<String>,
    },

    /// The server's circuit breaker is open: it failed too many calls in a row.
    #[error("server `{server}`: {}", redact_text(message))]
    CircuitOpen {
        /// The server's name.
        server: String,
        /// How many failures, the last one, and when it is probed again.
        message: String,
    },

    /// The connection broke while the call was in flight.
    #[error(
        "server `{server}`: connection lost during {what}: {}{}",
        redact_text(reason),
        tail_suffix(stderr_tail)
    )]
    ConnectionLost {
        /// The server's name.
        server: String,
        /// What was in flight.
        what: String,
        /// Exit status or transport error.
        reason: String,
        /// The last lines the server wrote to stderr, if any.
        stderr_tail: Vec<String>,
        /// The cause, when it is a Rust error (only its words, redacted, when they hold a
        /// URL's secret).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// No tool has that name.
    #[error("no tool named `{name}`{}", suggest_suffix(suggestion))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest existing name, if one is close.
        suggestion: Option<String>,
    },

    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` returned error {code}: {}", redact_text(message))]
    Server {
        /// The server's name.
        server: String,
        /// JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
        /// The error's `data`, as the server sent it (e.g. the `requiredCapabilities` of a
        /// -32021), for whoever passes the error on.
        data: Option<serde_json::Value>,
    },

    /// The server needs a client capability the request did not declare (-32021): for the
    /// Tasks extension, a tool that only runs as a task (call it with
    /// [`Hub::call_task`](crate::Hub::call_task)).
    #[error(
        "server `{server}` needs a client capability the request did not declare: {}{}",
        redact_text(message),
        required_suffix(required)
    )]
    MissingCapability {
        /// The server's name.
        server: String,
        /// The server's message.
        message: String,
        /// The capabilities it requires, as it sent them (`requiredCapabilities`), if it did.
        required: Option<serde_json::Value>,
    },

    /// The server session a task ran in has ended (the server exited, crashed or was
    /// restarted): the task is gone with it; call again.
    #[error(
        "server `{server}`: task `{task}` is lost: {}{}",
        redact_text(reason),
        tail_suffix(stderr_tail)
    )]
    TaskLost {
        /// The server's name.
        server: String,
        /// The server's id of the task.
        task: String,
        /// What became of the session (exit status, transport error).
        reason: String,
        /// The last lines the server wrote to stderr, if any.
        stderr_tail: Vec<String>,
        /// The cause, when it is a Rust error (only its words, redacted, when they hold a
        /// URL's secret).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// The server answered something that is not valid MCP.
    #[error("server `{server}` violated the protocol: {}", redact_text(message))]
    Protocol {
        /// The server's name.
        server: String,
        /// What was wrong.
        message: String,
        /// The cause, when it is a Rust error (only its words, redacted, when they hold a
        /// URL's secret).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// The caller cancelled, or the hub is shutting down.
    #[error("call cancelled: {}", redact_text(.0))]
    Cancelled(String),

    /// Arguments given by the caller are not valid JSON or not an object.
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments {
        /// The exposed tool name.
        tool: String,
        /// What is wrong, in words a model can act on.
        message: String,
    },

    /// Two servers were given the same name.
    #[error("two servers are named `{name}`: server names must be unique")]
    DuplicateServer {
        /// The name.
        name: String,
    },

    /// The permission policy refused the call (it never reached the server).
    #[error("{0}")]
    Denied(Refusal),

    /// The tool belongs to a server outside the caller's scope (its `stages` / `agents`): the
    /// call never reached the server.
    #[error(
        "tool `{tool}` is outside scope `{scope}`: server `{server}` is not for it ({reason}); \
         call only tools listed by `tools_for` that scope"
    )]
    OutOfScope {
        /// The exposed tool name.
        tool: String,
        /// Its server.
        server: String,
        /// The caller's scope, as `STAGE/AGENT`.
        scope: String,
        /// Which dimension does not admit the server.
        reason: String,
    },

    /// The permission rules are invalid.
    #[error("invalid policy: {0}")]
    Policy(#[from] PolicyError),

    /// A required server failed to start.
    #[error("required server `{server}` failed to start: {}", redact_text(message))]
    RequiredServerFailed {
        /// The server's name.
        server: String,
        /// Its error.
        message: String,
    },

    /// The hub has been shut down: its servers can no longer be changed.
    #[error("the hub has been shut down: its servers cannot be changed; start a new hub")]
    HubShutDown,

    /// The tool's input schema is beyond the bounds the hub keeps (a `$ref` cycle, an
    /// exponential expansion): the call was refused before reaching the server; the server's
    /// other tools work.
    #[error("tool `{tool}` cannot be called: {reason}")]
    UnusableTool {
        /// The exposed tool name.
        tool: String,
        /// Why, naming the place in the schema.
        reason: String,
    },
}

impl Error {
    /// Whether this failure says something about the server's health (transport, timeout,
    /// server error), as opposed to the caller's input or a tool's own `isError` answer. A
    /// JSON-RPC error that refuses the request itself (bad params, unknown method, a
    /// capability the client lacks) is the caller's: counted, it would let one client's bad
    /// calls open the breaker and take the server's tools away from every other caller.
    pub(crate) fn counts_against_server(&self) -> bool {
        match self {
            Error::Server { code, .. } => !refuses_the_request(*code),
            Error::Timeout { .. } | Error::ConnectionLost { .. } | Error::Protocol { .. } => true,
            _ => false,
        }
    }
}

impl Error {
    /// The error with `error` kept as its cause (see [`cause`]), for a variant that keeps one
    /// as a `String`'s worth of words and the error beside them; any other is returned as is.
    pub(crate) fn caused_by(
        mut self,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        if let Error::Connect { source, .. }
        | Error::ConnectionLost { source, .. }
        | Error::Protocol { source, .. }
        | Error::TaskLost { source, .. }
        | Error::Auth { source, .. } = &mut self
        {
            *source = cause(error);
        }
        self
    }
}

/// JSON-RPC error codes that say the request was wrong, not the server: parse error, invalid
/// request, method not found, invalid params (JSON-RPC 2.0), resource not found (-32002),
/// a client capability missing (-32021) and URL elicitation required (-32042) (MCP).
fn refuses_the_request(code: i32) -> bool {
    matches!(
        code,
        -32700 | -32600 | -32601 | -32602 | -32002 | -32021 | -32042
    )
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The cause an error keeps as its `source`, for a harness walking the chain; its words are
/// in the error's own message already.
pub(crate) type Cause = Option<Box<dyn std::error::Error + Send + Sync>>;

/// `error` as an error keeps it as its cause: itself when none of its words (its `Display`
/// down its chain, its `Debug`) hold anything [`redact_text`] would take out, else only its
/// words, redacted: whoever walks the chain prints them, and the secret must not ride along.
pub(crate) fn cause(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
    let clean = |text: String| redact_text(&text) == text;
    let words = std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source())
        .all(|e| clean(e.to_string()));
    if words && clean(format!("{error:?}")) {
        Some(Box::new(error))
    } else {
        Some(Box::new(Redacted(
            redact_text(&error.to_string()).into_owned(),
        )))
    }
}

/// A cause's words with its URLs redacted, standing in for a cause that held a secret.
#[derive(Debug)]
struct Redacted(String);

impl std::fmt::Display for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Redacted {}

fn tail_suffix(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(
            "\n  server stderr (last lines):\n    {}",
            redact_text(&tail.join("\n    "))
        )
    }
}

/// What a server said it requires: the Tasks extension in words, anything else as its JSON
/// (cut: it is the server's).
fn required_suffix(required: &Option<serde_json::Value>) -> String {
    const MAX: usize = 200;
    let Some(required) = required else {
        return String::new();
    };
    let tasks = required
        .pointer("/extensions")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|extensions| extensions.contains_key(crate::call_options::TASKS_EXTENSION));
    if tasks {
        return " (the Tasks extension: call the tool as a task)".to_string();
    }
    let mut text = required.to_string();
    if text.len() > MAX {
        let mut end = MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    format!(" (requires {text})")
}

fn suggest_suffix(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => ": call only a tool of the current tool list".to_string(),
    }
}

fn no_resource_server(uri: &str, offering: &[String]) -> String {
    if offering.is_empty() {
        format!("no connected server offers resources, so `{uri}` cannot be read")
    } else {
        format!(
            "no server lists `{uri}` and several offer resources ({}): name the server",
            offering.join(", ")
        )
    }
}

/// Durations as a person reads them: `250ms`, `3s`, `1.5s`.
pub(crate) fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_shows_every_url_without_its_query_or_userinfo() {
        let url = "http://u:S2@127.0.0.1:9/mcp?api_key=S1#S3";
        let errors = [
            Error::Connect {
                server: "s".into(),
                message: format!("error sending request for url ({url})"),
                stderr_tail: vec![format!("GET {url}")],
                source: None,
            },
            Error::ConnectionLost {
                server: "s".into(),
                what: "tools/call".into(),
                reason: format!("POST {url} failed"),
                stderr_tail: Vec::new(),
                source: None,
            },
            Error::Unavailable {
                server: "s".into(),
                state: ServerState::Stopped,
                reason: url.into(),
            },
            Error::Server {
                server: "s".into(),
                code: -32000,
                message: url.into(),
                data: None,
            },
        ];
        for error in errors {
            let shown = error.to_string();
            assert!(shown.contains("http://127.0.0.1:9/mcp?…"), "{shown}");
            for secret in ["S1", "S2", "S3"] {
                assert!(!shown.contains(secret), "{shown}");
            }
        }
    }

    #[test]
    fn connect_error_shows_the_stderr_tail() {
        let err = Error::Connect {
            server: "broken".into(),
            message: "process exited with status 3".into(),
            stderr_tail: vec!["Error: missing API key".into()],
            source: None,
        };
        let text = err.to_string();
        assert!(text.contains("server `broken`"), "{text}");
        assert!(text.contains("Error: missing API key"), "{text}");
    }

    /// The error `error` keeps as its cause, as `E`.
    fn kept<E: std::error::Error + 'static>(error: &Error) -> &E {
        std::error::Error::source(error)
            .and_then(|cause| cause.downcast_ref::<E>())
            .unwrap_or_else(|| panic!("no {} under {error}", std::any::type_name::<E>()))
    }

    fn io(words: &str) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::BrokenPipe, words.to_owned())
    }

    #[test]
    fn each_cause_kept_is_the_original_error_and_the_message_is_unchanged() {
        let bad_json = || match serde_json::from_str::<serde_json::Value>("{") {
            Err(error) => error,
            Ok(value) => panic!("`{{` parsed as {value}"),
        };
        let connect = Error::Connect {
            server: "s".into(),
            message: "cannot start `x`: pipe closed".into(),
            stderr_tail: vec!["boom".into()],
            source: None,
        };
        assert_eq!(
            connect.to_string(),
            "server `s`: could not connect: cannot start `x`: pipe closed\n  \
             server stderr (last lines):\n    boom"
        );
        let shown = connect.to_string();
        let connect = connect.caused_by(io("pipe closed"));
        assert_eq!(connect.to_string(), shown);
        assert_eq!(kept::<std::io::Error>(&connect).to_string(), "pipe closed");

        let lost = Error::ConnectionLost {
            server: "s".into(),
            what: "tools/call echo".into(),
            reason: "pipe closed".into(),
            stderr_tail: Vec::new(),
            source: cause(io("pipe closed")),
        };
        assert_eq!(
            lost.to_string(),
            "server `s`: connection lost during tools/call echo: pipe closed"
        );
        assert_eq!(
            kept::<std::io::Error>(&lost).kind(),
            std::io::ErrorKind::BrokenPipe
        );

        let unavailable = Error::Unavailable {
            server: "s".into(),
            state: ServerState::Stopped,
            reason: "removed by a reload while the call was in flight (pipe closed)".into(),
        };
        assert_eq!(
            unavailable.to_string(),
            "server `s` is stopped: removed by a reload while the call was in flight (pipe closed)"
        );
        // No source: a state and a cause would take the error past 128 bytes (the size test).
        assert!(std::error::Error::source(&unavailable).is_none());

        let protocol = Error::Protocol {
            server: "s".into(),
            message: format!("cannot read the answer: {}", bad_json()),
            source: cause(bad_json()),
        };
        assert_eq!(
            protocol.to_string(),
            "server `s` violated the protocol: cannot read the answer: \
             EOF while parsing an object at line 1 column 1"
        );
        assert_eq!(kept::<serde_json::Error>(&protocol).line(), 1);

        let lost_task = Error::TaskLost {
            server: "s".into(),
            task: "t1".into(),
            reason: "pipe closed".into(),
            stderr_tail: Vec::new(),
            source: None,
        }
        .caused_by(io("pipe closed"));
        assert_eq!(
            lost_task.to_string(),
            "server `s`: task `t1` is lost: pipe closed"
        );
        kept::<std::io::Error>(&lost_task);
    }

    #[test]
    fn a_cause_whose_words_hold_a_url_secret_is_kept_as_its_words_redacted() {
        let url = "http://u:S2@127.0.0.1:9/mcp?api_key=S1#S3";
        let error = Error::ConnectionLost {
            server: "s".into(),
            what: "tools/call".into(),
            reason: format!("POST {url} failed"),
            stderr_tail: Vec::new(),
            source: None,
        }
        .caused_by(io(&format!("POST {url} failed")));
        let said = std::error::Error::source(&error).unwrap_or_else(|| panic!("no cause"));
        // Not the original (its words hold the secret), and nothing under it.
        assert!(said.downcast_ref::<std::io::Error>().is_none());
        assert!(said.source().is_none());
        assert_eq!(said.to_string(), "POST http://127.0.0.1:9/mcp?… failed");
        for shown in [said.to_string(), format!("{said:?}"), error.to_string()] {
            for secret in ["S1", "S2", "S3"] {
                assert!(!shown.contains(secret), "{shown}");
            }
        }
        // A URL with nothing to hide leaves the error as it was.
        let plain = cause(io("POST http://127.0.0.1:9/mcp failed"));
        assert!(plain.is_some_and(|kept| kept.downcast_ref::<std::io::Error>().is_some()));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(fmt_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(fmt_duration(Duration::from_secs(30)), "30s");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5s");
    }

    /// A harness returns `Result<_, Error>` everywhere: at 128 bytes (its default bound)
    /// clippy's `result_large_err` fires on each of its functions that does.
    #[test]
    fn the_error_stays_under_clippys_large_error_bound() {
        assert!(
            std::mem::size_of::<Error>() < 128,
            "{}",
            std::mem::size_of::<Error>()
        );
    }
}
