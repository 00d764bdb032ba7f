//! Every default number in one place, each with where it comes from.

use std::time::Duration;

/// Time for spawn + probe + handshake + first `tools/list`. 30 s is what Claude Code and the
/// official SDK clients allow a cold `npx` server on a slow machine.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// A tool call's default deadline; the SDKs use 60 s, agent tools (builds, searches) need more.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Absolute cap for a call whose deadline keeps being extended by progress notifications.
pub const CALL_TIMEOUT_CAP: Duration = Duration::from_secs(600);

/// How long `server/discover` may go unanswered before we assume a legacy server that ignores
/// unknown methods (rmcp's own `Auto` mode waits 10 s; the answer is cached, so this is paid once).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The probe deadline for streamable HTTP servers. An old HTTP server refuses `server/discover`
/// at once (HTTP 400/404/405 or a JSON-RPC error); silence there is a busy server, not an old
/// one. Under rmcp's own `Auto` limit of 10 s, which would otherwise decide first.
pub const HTTP_PROBE_TIMEOUT: Duration = Duration::from_secs(8);

/// How long a POST carrying our answer to a server request (or a cancellation) may take.
/// rmcp's 5 s loses an elicitation answer to a server that is only busy, and the server then
/// waits for it forever; the server's own request deadline is 60 s in the SDKs.
pub const HTTP_CONTROL_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a stdio server gets to exit after its stdin closes, before SIGTERM then SIGKILL.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How long a server gets after SIGTERM before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(500);

/// How long shutdown waits for processes still being stopped after their connection was
/// dropped mid-start (stdin closed at once, then SIGTERM and [`TERM_GRACE`], then SIGKILL):
/// that ladder and a second to spare on a loaded machine.
pub const REAP_WAIT: Duration = Duration::from_millis(1500);

/// How long a stdio server's reader polls its pipe after a lone tool call is written, before
/// it parks (`transport/busy_pipe.rs`). On the 2-core VMs this project is measured on, a Node
/// echo server answers within ~10 µs when the reader polls, and most answers of a quick tool
/// come well inside 50 µs; a longer budget caught few more and cost more CPU when a server
/// is slow (each such call burns the whole budget). The cost is bounded: one budget per call.
pub const READ_SPIN: Duration = Duration::from_micros(50);

/// How long a reader polls before it yields the CPU between reads. A server woken by our
/// write is often queued on the writer's CPU (the kernel expects the writer to sleep); a
/// poll that never yields then keeps it waiting for the whole budget, call after call. Past
/// this point an answer is late enough that yielding costs nothing it would have gained: on
/// the bench's echo server, one thread's p99 133 against 223 µs without the yield (A/B, ten
/// interleaved rounds each); a yield from the start cost 5–9 µs of p50 on two workers.
pub const READ_SPIN_YIELD_AFTER: Duration = Duration::from_micros(10);

/// The most `HubOptions::read_spin` may ask: a poll holds one of the runtime's threads (on a
/// current-thread runtime, the only one, timers included), so a larger budget is capped here.
pub const MAX_READ_SPIN: Duration = Duration::from_millis(1);

/// How long calls in flight to a server a reload removed or replaced may take to finish
/// before it is stopped: the gateway's own shutdown grace (`mcpmux serve --grace`), so a
/// reload is never harder on a call than stopping the gateway.
pub const RELOAD_DRAIN: Duration = Duration::from_secs(10);

/// How often a draining server is looked at for calls still in flight. Polled, not signalled,
/// so that calls pay nothing for a reload that rarely comes; 10 ms is unnoticeable beside a
/// process exit.
pub const DRAIN_POLL: Duration = Duration::from_millis(10);

/// How many stderr lines of a server we keep for error messages.
pub const STDERR_TAIL_LINES: usize = 40;

/// Longest stderr line kept; longer ones are cut (a server can print megabytes on one line).
pub const STDERR_LINE_MAX: usize = 2000;

/// Most `tools/list` pages followed before we call a server's pagination broken.
pub const MAX_LIST_PAGES: usize = 1000;

/// Most tools one server's cache entry may hold: far past any real server (the largest
/// reference servers list a few dozen), small enough that a planted entry cannot flood a
/// listing.
pub const MAX_CACHED_TOOLS: usize = 10_000;

/// Largest tool cache entry read or written (16 MiB): a server's tool list with its schemas,
/// bounded like any outside input.
pub const MAX_TOOL_CACHE_BYTES: u64 = 16 << 20;

/// How old a cached tool list may be and still answer a listing (a day): a lazy server not
/// used for longer is started for the next listing, so its list is never more than a day
/// behind what it would say.
pub const TOOL_CACHE_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Longest tool name, exposed or exported: Anthropic, OpenAI and Gemini all cap function names
/// at 64 characters.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Environment variables a stdio server inherits from us; everything else must be configured.
/// The same list goose and Claude Code pass; a smaller environment also starts Node faster.
#[cfg(not(windows))]
pub const ENV_ALLOWLIST: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR",
];

/// Environment variables a stdio server inherits from us on Windows: the MCP TypeScript SDK's
/// `DEFAULT_INHERITED_ENV_VARS` for win32, and `PROGRAMFILES` (without `SYSTEMROOT` and the
/// profile folders, Node and `npx` cannot start).
#[cfg(windows)]
pub const ENV_ALLOWLIST: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The size a wire log (`--wire-log`) grows to before it is rotated (one older file kept, so at
/// most twice this on disk): enough for hours of ordinary calls; a session of large results
/// rotates, which keeps the disk of a forgotten `MCPMUX_WIRE_LOG` bounded.
pub const WIRE_LOG_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Longest `traceparent` read from a client: a version-00 one is 55 characters; W3C Trace
/// Context (§3.2.4) lets later versions append fields, so some room is left. Longer: ignored.
pub const MAX_TRACEPARENT_LEN: usize = 256;

/// Longest `tracestate` read from a client: W3C Trace Context (§3.3.1.5) asks that at least
/// 512 characters be propagated and allows dropping the rest. Longer: ignored.
pub const MAX_TRACESTATE_LEN: usize = 512;

/// Longest `baggage` read from a client: W3C Baggage (§3.3.1.2) limits a header to 8192 bytes.
/// Longer: dropped whole, at the door.
pub const MAX_BAGGAGE_LEN: usize = 8192;

/// Most list members of a `baggage` read from a client: W3C Baggage (§3.3.1.2) limits a header
/// to 64. More: dropped whole, at the door.
pub const MAX_BAGGAGE_MEMBERS: usize = 64;

/// Largest JSON-RPC line accepted from a stdio server (a 50 MB result must not take us down).
pub const MAX_STDIO_FRAME: usize = 64 * 1024 * 1024;

/// How many stderr lines an error message quotes (the full tail is in `mcpmux servers --json`).
pub const ERROR_TAIL_LINES: usize = 8;

/// Retries of a safe (read-only or idempotent) call after a transport failure.
pub const MAX_RETRIES: u32 = 2;

/// Largest tool result kept inline; the rest is spilled to a file. 100 KiB is about 25k tokens,
/// already a large share of a model's context for one tool answer.
pub const MAX_RESULT_BYTES: usize = 100 * 1024;

/// First reconnect delay after a crash.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);

/// Longest reconnect delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Failed reconnects for this long disable the server (a human has to look).
pub const BACKOFF_GIVE_UP: Duration = Duration::from_secs(600);

/// Consecutive failed calls that open the circuit breaker.
pub const BREAKER_THRESHOLD: u32 = 3;

/// How long an open breaker waits before letting one probe call through.
pub const BREAKER_COOL_DOWN: Duration = Duration::from_secs(30);

/// Most bytes the spill folder may hold; the oldest files go first beyond it. Four of the
/// largest results a stdio server can send (`MAX_STDIO_FRAME`, 64 MiB): room for any one spill
/// and recent ones, while a flood of cut results cannot fill the temp disk.
pub const SPILL_MAX_TOTAL_BYTES: u64 = 4 * MAX_STDIO_FRAME as u64;

/// Spill files older than this are removed when a hub starts: a day covers a working session
/// that reads a spill after the hub that wrote it (kept with `keep_spills`) has ended.
pub const SPILL_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

// Streamable HTTP (`transport/http.rs`): the shared client and rmcp's SSE stream.

/// rmcp retries a broken SSE stream forever by default; a few tries, then the call fails and
/// the supervisor decides. Three tries at 250 ms doubling wait 1.75 s in all, well inside a
/// call's deadline.
pub(crate) const HTTP_SSE_RECONNECT_TRIES: usize = 3;

/// First SSE reconnect delay; doubles up to `HTTP_SSE_RECONNECT_MAX_DELAY`.
pub(crate) const HTTP_SSE_RECONNECT_BASE: Duration = Duration::from_millis(250);

/// Longest single SSE reconnect delay.
pub(crate) const HTTP_SSE_RECONNECT_MAX_DELAY: Duration = Duration::from_secs(2);

/// Connect timeout of the shared client; request deadlines are set per call above it. reqwest
/// has none (the OS gives up after minutes); a reachable host connects in well under a second,
/// so 10 s leaves room for a slow network and still fails a black-holed address promptly.
pub(crate) const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an idle pooled connection is kept. Node and uvicorn close idle keep-alive
/// connections after 5 s; a request sent on one as the server closes it is reset. Staying
/// under that (undici keeps 4 s, httpx 5 s) makes the race rare; the resend in
/// `transport/http_client.rs` covers it.
pub(crate) const HTTP_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

// A live streamable HTTP session whose server refuses connections (`transport/http_session.rs`).

/// How long a request on a live session waits for a server that refuses connections (it is
/// restarting) before the refusal stands: as long as a starting server gets
/// (`STARTUP_TIMEOUT`). A call's own deadline cuts it shorter.
pub(crate) const HTTP_UNREACHABLE_WAIT: Duration = Duration::from_secs(30);

/// First pause before connecting again; doubles up to `HTTP_UNREACHABLE_MAX_DELAY`.
pub(crate) const HTTP_UNREACHABLE_FIRST_DELAY: Duration = Duration::from_millis(50);

/// Longest pause between two connection attempts: a restarted server is found within a second.
pub(crate) const HTTP_UNREACHABLE_MAX_DELAY: Duration = Duration::from_secs(1);

// Legacy HTTP+SSE (`transport/sse.rs`).

/// A `POST` only hands a message over (the server answers `202 Accepted`; the reply comes on
/// the stream), so it is quick; a server that holds it this long is not coming back.
pub(crate) const SSE_POST_TIMEOUT: Duration = Duration::from_secs(30);

// WebSocket (`transport/ws.rs`).

/// A send that cannot get its frame out this long (the server stopped reading) fails, so it
/// does not hold the socket forever; the same bound as a legacy SSE `POST`.
pub(crate) const WS_SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// How long closing waits for the close frame to go out: on a healthy socket it takes
/// milliseconds, and closing must not hold up a hub's shutdown.
pub(crate) const WS_CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

// `headersHelper` (`transport/headers_helper.rs`).

/// A helper that takes longer than this (or than the startup timeout) is stopped. A helper
/// prints a cached token or asks a CLI login in about a second; 10 s leaves room for a slow
/// one without letting a hung one hold the connection for the whole startup timeout.
pub(crate) const HEADERS_HELPER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest task id (SEP-2663) taken from a server: an id is sent back in every request
/// about its task and kept in memory until the task expires. Servers mint short ids (rmcp: a
/// UUID); 1 KiB leaves room for any encoding.
pub(crate) const MAX_TASK_ID_BYTES: usize = 1024;

/// Tasks remembered per server (the session each was created in, so a request about it goes
/// to that session, and a session that ended says the task is lost). Past it the record that
/// expires first is forgotten: a request about that task then goes to the current session.
pub(crate) const MAX_REMEMBERED_TASKS: usize = 10_000;

/// How long a task is remembered when its server keeps it without limit (`ttlMs: null`), and
/// the longest it is remembered whatever the server says: a day, as the tool and spill caches.
pub(crate) const TASK_KEEP_MAX: Duration = Duration::from_secs(24 * 60 * 60);
