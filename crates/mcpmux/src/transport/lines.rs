//! Newline-delimited JSON-RPC over a pair of byte streams (a child's stdout and stdin, an
//! in-process duplex), as rmcp's `Transport`. Ours rather than rmcp's `AsyncRwTransport`,
//! for three things a hub needs and a transport for one session does not:
//!
//! - **Reading**: lines are cut, screened and parsed straight from the read buffer (rmcp's
//!   copies each message three times and keeps the largest line's buffer forever: a 10 MB
//!   result held ~40 MB). Lines that are not JSON-RPC (banners, a JSON logger's records) are
//!   skipped with a debug line; one nested too deep for serde, or a response that does not
//!   read as MCP, fails the one request it answers at once instead of leaving it to its
//!   deadline. A line past `max_line` is skipped to its end unread (memory stays bounded),
//!   and fails the request its head or tail names with "answer over 64 MiB", or every
//!   request in flight when neither names one (`lines/skip.rs`).
//! - **Writing**: a message is serialized and queued when rmcp sends it, in order; whichever
//!   send's task finds no write under way writes everything queued in one `write` (rmcp
//!   writes and flushes each message under an async lock, one task after another). Under
//!   load many messages leave in one syscall and reach the server in one read.
//! - **Tool results**: the answer to a `tools/call` is read as a tool result straight from
//!   the line. rmcp reads every message through untagged enums, which buffer the whole
//!   message, copy its strings twice more (a 10 MB result took 30 MB of heap) and build a
//!   serde error for each variant tried before the right one (about a tenth of the hub's
//!   CPU per call).
//! - **Bounds**: the outgoing buffer holds at most `HIGH_WATER` bytes before senders wait,
//!   so a server that stops reading cannot make us buffer without end.
//!
//! Knows nothing of processes, tools or the hub.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, NumberOrString, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use super::{nesting, oversize};

/// Bytes read at a time: `FIRST_READ` until a read fills that, then `READ_CHUNK`. Most
/// servers' messages are small, and the buffer is zeroed, so resident: with ten servers the
/// 64 KiB buffers were half a hub's heap.
const FIRST_READ: usize = 4 * 1024;
const READ_CHUNK: usize = 64 * 1024;

/// Bytes queued for the peer before a sender waits for the writer: far above any burst of
/// calls, far below what would hurt if a server stopped reading.
const HIGH_WATER: usize = 8 * 1024 * 1024;

/// A line buffer grown past this is given back once its line is read, so one huge message
/// does not hold its memory for the life of the session.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// Most `tools/call` ids remembered for a direct read: past it (calls whose answers never
/// came), they are forgotten and their answers take the general path.
const MAX_CALLS_REMEMBERED: usize = 4096;

/// JSON-RPC "Parse error": a response that could not be read as MCP fails its request with it.
const PARSE_ERROR: i32 = -32700;

/// rmcp's transport over `R` (read) and `W` (write), for one server named `server`.
pub(crate) struct LineTransport<R, W> {
    reader: LineReader<R>,
    outbox: Arc<Outbox<W>>,
}

/// A message read, or the answer to a direct call, in the order read.
enum Item {
    Message(RxJsonRpcMessage<RoleClient>),
    Answer(tokio::sync::oneshot::Sender<direct::Answer>, direct::Answer),
}

/// The requests rmcp sent whose answers have not come yet.
#[derive(Default)]
struct Awaited {
    /// Those of `tools/call`: an answer to one of them is a tool result (or an error), which
    /// is what lets it be read directly.
    tool_calls: std::collections::HashSet<RequestId>,
    /// All of them: what fails when an answer too large to read names none.
    requests: std::collections::HashSet<RequestId>,
}

impl Awaited {
    /// The answer to `id` has come (or will never be read): it is no longer awaited. True
    /// when it was a tool call.
    fn answered(&mut self, id: &RequestId) -> bool {
        self.requests.remove(id);
        self.tool_calls.remove(id)
    }
}

type ToolCalls = Arc<Mutex<Awaited>>;

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading lines of at most `max_line` bytes from `read`.
    pub(crate) fn new(read: R, write: W, server: &str, max_line: usize) -> Self {
        Self::kicked(read, write, server, max_line, None)
    }

    /// As [`LineTransport::new`], with `kick` armed each time a direct call is written (a
    /// [`super::busy_pipe::BusyPipe`] reader then polls for its answer).
    pub(crate) fn kicked(
        read: R,
        write: W,
        server: &str,
        max_line: usize,
        kick: Option<Arc<super::busy_pipe::Kick>>,
    ) -> Self {
        let outbox = Arc::new(Outbox::new(write));
        let line = Box::new(OutboxLine(Arc::downgrade(&outbox)));
        let direct = Arc::new(Direct::new(line, kick));
        Self {
            reader: LineReader::new(read, server, max_line, direct),
            outbox,
        }
    }

    /// Where the connection's requests are sent beside rmcp's session task
    /// (`lines/direct.rs`).
    pub(crate) fn direct(&self) -> Arc<Direct> {
        self.reader.direct.clone()
    }

    /// Remembers the id of a request about to be sent (and whether it is a `tools/call`);
    /// forgets one rmcp gave up on.
    fn note(&self, item: &TxJsonRpcMessage<RoleClient>) {
        match item {
            ClientJsonRpcMessage::Request(request) => {
                let mut awaited = crate::sync::lock(&self.reader.tool_calls);
                if awaited.requests.len() >= MAX_CALLS_REMEMBERED {
                    awaited.requests.clear();
                }
                awaited.requests.insert(request.id.clone());
                if let ClientRequest::CallToolRequest(_) = &request.request {
                    if awaited.tool_calls.len() >= MAX_CALLS_REMEMBERED {
                        awaited.tool_calls.clear();
                    }
                    awaited.tool_calls.insert(request.id.clone());
                }
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if let rmcp::model::ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    crate::sync::lock(&self.reader.tool_calls).answered(id);
                }
            }
            _ => {}
        }
    }
}

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Queued now, in the order rmcp sends, unless the queue is full: the future then
        // waits its turn. rmcp spawns each send's future as a task of its own; the first of
        // them to run writes what every send before it queued, in one write.
        self.note(&item);
        let queued = encode(&item).map(|bytes| Outbox::queue(&self.outbox, bytes));
        let outbox = self.outbox.clone();
        async move {
            if let Some((bytes, turn)) = queued? {
                outbox.queue_in_turn(bytes, turn).await?;
            }
            outbox.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if self.reader.invalid > 0 {
                // rmcp's rule, kept: well-formed JSON that is no MCP message gets an
                // "invalid request" answer without an id.
                self.reader.invalid -= 1;
                let answer = TxJsonRpcMessage::<RoleClient>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if let Ok(bytes) = encode(&answer) {
                    let sent = match Outbox::queue(&self.outbox, bytes) {
                        Some((bytes, turn)) => self.outbox.queue_in_turn(bytes, turn).await,
                        None => Ok(()),
                    };
                    if sent.is_ok() {
                        let _ = self.outbox.flush().await;
                    }
                }
            }
            match self.reader.ready.pop_front() {
                Some(Item::Message(message)) => return Some(message),
                Some(Item::Answer(waiter, answer)) => {
                    // The caller may have given up meanwhile: nothing is owed to it.
                    let _ = waiter.send(answer);
                    continue;
                }
                None => {}
            }
            if !self.reader.fill().await {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.outbox.close().await
    }
}

fn encode(item: &TxJsonRpcMessage<RoleClient>) -> std::io::Result<Vec<u8>> {
    if let ClientJsonRpcMessage::Request(request) = item
        && let Some(line) = call_request::encode(request)
    {
        return Ok(line);
    }
    let mut bytes = serde_json::to_vec(item).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The read side: a buffer of bytes read, the line being assembled, and the messages parsed
/// but not yet taken. Its state lives here, not in a future, because rmcp polls `receive`
/// inside a `select!` and drops it whenever another branch is ready.
struct LineReader<R> {
    inner: R,
    server: String,
    max_line: usize,
    chunk: Box<[u8]>,
    /// The start of a line whose end has not been read yet.
    line: Vec<u8>,
    /// The current line is over `max_line`: its ends, kept while it is skipped to its end.
    skipping: Option<Box<oversize::Skipped>>,
    ready: VecDeque<Item>,
    /// The requests rmcp sent whose answers are awaited, and which of them are `tools/call`.
    tool_calls: ToolCalls,
    /// The calls sent directly, whose answers go straight to their callers.
    direct: Arc<Direct>,
    /// Messages that were JSON but not MCP, each owed an "invalid request" answer.
    invalid: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(inner: R, server: &str, max_line: usize, direct: Arc<Direct>) -> Self {
        Self {
            inner,
            server: server.to_string(),
            max_line,
            chunk: vec![0; FIRST_READ].into_boxed_slice(),
            line: Vec::new(),
            skipping: None,
            ready: VecDeque::new(),
            tool_calls: ToolCalls::default(),
            direct,
            invalid: 0,
            eof: false,
        }
    }

    /// Reads once and parses every line it completes; false at the end of the stream (a last
    /// line without its newline is incomplete and dropped) or on a read error.
    async fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        // Cancel-safe: a dropped read has consumed nothing.
        let n = match self.inner.read(&mut self.chunk).await {
            Ok(0) => {
                self.eof = true;
                self.direct.close();
                return false;
            }
            Ok(n) => n,
            Err(error) => {
                tracing::debug!(server = %self.server, %error, "reading the server's output failed");
                self.eof = true;
                self.direct.close();
                return false;
            }
        };
        let chunk = std::mem::take(&mut self.chunk);
        self.feed(&chunk[..n]);
        self.chunk = if n == chunk.len() && n < READ_CHUNK {
            vec![0; READ_CHUNK].into_boxed_slice()
        } else {
            chunk
        };
        true
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            // A vectorised search: a large result's line spans thousands of chunks.
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                self.extend(bytes);
                return;
            };
            let (head, rest) = (&bytes[..end], &bytes[end + 1..]);
            bytes = rest;
            if self.line.is_empty() && self.skipping.is_none() && head.len() <= self.max_line {
                // The whole line is in this chunk: read it where it lies.
                self.take(head);
                continue;
            }
            self.extend(head);
            if let Some(skipped) = self.skipping.take() {
                self.skipped(&skipped);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            self.take(&line);
            self.line = line;
            self.line.clear();
            if self.line.capacity() > KEEP_CAPACITY {
                self.line = Vec::new();
            }
        }
    }

    /// Adds the start (or middle) of a line; past `max_line` only its ends are kept.
    fn extend(&mut self, bytes: &[u8]) {
        if let Some(skipped) = &mut self.skipping {
            skipped.take(bytes);
            return;
        }
        if self.line.len() + bytes.len() > self.max_line {
            let mut skipped = Box::<oversize::Skipped>::default();
            skipped.take(&self.line);
            skipped.take(bytes);
            self.skipping = Some(skipped);
            self.line = Vec::new();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    /// One whole line (without its newline): parsed and queued, answered in its request's
    /// place, or skipped with the reason logged.
    fn take(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if !is_json_rpc(line) {
            if !line.iter().all(u8::is_ascii_whitespace) {
                let shown = String::from_utf8_lossy(&line[..line.len().min(200)]);
                tracing::debug!(server = %self.server, "ignoring a stdout line that is not JSON-RPC: {shown}");
            }
            return;
        }
        let answer;
        let line = match nesting::screen(line) {
            nesting::Screen::Pass => line,
            nesting::Screen::Answer(replacement) => {
                tracing::warn!(server = %self.server, "a response is nested too deep to decode: failing its request");
                answer = replacement;
                &answer[..]
            }
            nesting::Screen::Drop(reason) => {
                tracing::warn!(server = %self.server, "dropping a message: {reason}");
                return;
            }
        };
        if let Some(message) = self.tool_result(line) {
            self.push(message);
            return;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
            Ok(message) => {
                let answered = match &message {
                    ServerJsonRpcMessage::Response(response) => Some(&response.id),
                    ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
                    _ => None,
                };
                if let Some(id) = answered {
                    crate::sync::lock(&self.tool_calls).answered(id);
                }
                self.push(message);
            }
            Err(error) => self.unreadable(line, &error),
        }
    }

    /// Queues a message read; an answer to a direct call goes, in its place, to its caller.
    fn push(&mut self, message: RxJsonRpcMessage<RoleClient>) {
        let item = match message {
            ServerJsonRpcMessage::Response(response) => match self.direct.take(&response.id) {
                Some(waiter) => Item::Answer(waiter, Ok(response.result)),
                None => Item::Message(ServerJsonRpcMessage::Response(response)),
            },
            ServerJsonRpcMessage::Error(error) => {
                match error.id.as_ref().and_then(|id| self.direct.take(id)) {
                    Some(waiter) => Item::Answer(
                        waiter,
                        Err(rmcp::service::ServiceError::McpError(error.error)),
                    ),
                    None => Item::Message(ServerJsonRpcMessage::Error(error)),
                }
            }
            other => Item::Message(other),
        };
        self.ready.push_back(item);
    }

    /// `line` read as the answer to one of our `tools/call` requests, its result read straight
    /// into a tool result; `None` when it is anything else, or does not read so (the general
    /// path then reads it, and says why if it cannot).
    fn tool_result(&self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        // Most lines while no call is awaited are notifications: not worth a scan.
        if crate::sync::lock(&self.tool_calls).tool_calls.is_empty() && !self.direct.awaits_any() {
            return None;
        }
        let (id, result) = super::call_result::answer_parts(line)?;
        if !crate::sync::lock(&self.tool_calls).answered(&id) && !self.direct.awaits_tool_call(&id)
        {
            return None;
        }
        let result = super::call_result::read(result.get())?;
        Some(ServerJsonRpcMessage::response(
            ServerResult::CallToolResult(result),
            id,
        ))
    }

    /// A JSON-RPC line serde could not read as MCP. Broken JSON is dropped (as every SDK
    /// does: answering it can start an error storm); a response to one of our requests fails
    /// that request now, saying why; a notification outside MCP is ignored; anything else is
    /// answered "invalid request".
    fn unreadable(&mut self, line: &[u8], error: &serde_json::Error) {
        use serde_json::error::Category;
        if matches!(error.classify(), Category::Syntax | Category::Eof) {
            tracing::debug!(server = %self.server, "ignoring an unparsable message: {error}");
            return;
        }
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
            return;
        };
        let method = value.get("method").and_then(serde_json::Value::as_str);
        match (method, request_id(&value)) {
            (None, Some(id)) => {
                tracing::warn!(server = %self.server, %id, "a response does not read as MCP: failing its request ({error})");
                crate::sync::lock(&self.tool_calls).answered(&id);
                let failure = ErrorData::new(
                    ErrorCode(PARSE_ERROR),
                    format!("the server's answer does not read as MCP: {error}"),
                    None,
                );
                self.push(RxJsonRpcMessage::<RoleClient>::error(failure, Some(id)));
            }
            (Some(method), None) if !is_mcp_notification(method) => {
                tracing::trace!(server = %self.server, method, "ignoring a notification outside MCP");
            }
            _ => {
                tracing::debug!(server = %self.server, "a message does not read as MCP: {error}");
                self.invalid += 1;
            }
        }
    }
}

/// The `id` of a message, when it is a string or an integer.
fn request_id(value: &serde_json::Value) -> Option<RequestId> {
    match value.get("id")? {
        serde_json::Value::String(id) => Some(NumberOrString::String(id.as_str().into())),
        serde_json::Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        _ => None,
    }
}

/// MCP's own notifications; others (an LSP server's, a vendor's) are skipped unread, as
/// rmcp does.
fn is_mcp_notification(method: &str) -> bool {
    method.starts_with("notifications/")
        && matches!(
            method,
            "notifications/cancelled"
                | "notifications/progress"
                | "notifications/message"
                | "notifications/resources/updated"
                | "notifications/resources/list_changed"
                | "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/elicitation/complete"
                | "notifications/subscriptions/acknowledged"
                | "notifications/tasks/status"
        )
}

/// A JSON object with a `"jsonrpc"` member. Serialisers put it first, so the head is checked
/// first; the tail, then the whole line, only when needed.
fn is_json_rpc(line: &[u8]) -> bool {
    let start = line.iter().position(|b| !b.is_ascii_whitespace());
    if start.map(|i| line[i]) != Some(b'{') {
        return false;
    }
    // Built once: every line the server writes comes through here.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"jsonrpc\""));
    let contains = |hay: &[u8]| FINDER.find(hay).is_some();
    let head = &line[..line.len().min(256)];
    let tail = &line[line.len().saturating_sub(256)..];
    contains(head) || contains(tail) || contains(line)
}

impl<R> Drop for LineReader<R> {
    fn drop(&mut self) {
        // The session is over: calls sent directly will not be answered.
        self.direct.close();
    }
}

/// A direct call's way into the outbox, while the transport lives (the outbox holds the
/// server's stdin, which must close with the session).
struct OutboxLine<W>(std::sync::Weak<Outbox<W>>);

impl<W: AsyncWrite + Unpin + Send + 'static> direct::Line for OutboxLine<W> {
    fn send(&self, bytes: Vec<u8>) -> direct::Write {
        let Some(outbox) = self.0.upgrade() else {
            return Box::pin(std::future::ready(Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "transport closed",
            ))));
        };
        let queued = Outbox::queue(&outbox, bytes);
        Box::pin(async move {
            if let Some((bytes, turn)) = queued {
                outbox.queue_in_turn(bytes, turn).await?;
            }
            outbox.flush().await
        })
    }
}

/// The write side: bytes queued, and the writer, which one send at a time holds.
struct Outbox<W> {
    queue: Mutex<Queue<W>>,
    /// Wakes senders waiting for room, and `close` waiting for the last write.
    drained: Notify,
}

struct Queue<W> {
    bytes: Vec<u8>,
    /// The writer, when no send holds it; `None` while one writes (or once closed).
    writer: Option<W>,
    /// Why the peer can no longer be written to.
    broken: Option<std::io::ErrorKind>,
    closed: bool,
    /// Sends that found the queue full wait their turn, first come first served: the next
    /// ticket to hand out, and the one whose turn it is.
    next_ticket: u64,
    turn: u64,
    /// Tickets given up before their turn (their sends dropped): skipped when it comes.
    abandoned: std::collections::BTreeSet<u64>,
}

impl<W> Queue<W> {
    fn refusal(&self) -> Option<std::io::Error> {
        if let Some(kind) = self.broken {
            return Some(std::io::Error::new(kind, "the server stopped reading"));
        }
        self.closed
            .then(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "transport closed"))
    }

    /// The next ticket's turn, past the abandoned ones.
    fn advance(&mut self) {
        self.turn += 1;
        while self.abandoned.remove(&self.turn) {
            self.turn += 1;
        }
    }

    fn has_room(&self) -> bool {
        self.bytes.len() < HIGH_WATER || self.bytes.is_empty()
    }

    fn append(&mut self, bytes: Vec<u8>) {
        if self.bytes.is_empty() {
            self.bytes = bytes;
        } else {
            self.bytes.extend_from_slice(&bytes);
        }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Outbox<W> {
    fn new(writer: W) -> Self {
        Self {
            queue: Mutex::new(Queue {
                bytes: Vec::new(),
                writer: Some(writer),
                broken: None,
                closed: false,
                next_ticket: 0,
                turn: 0,
                abandoned: std::collections::BTreeSet::new(),
            }),
            drained: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<W>> {
        crate::sync::lock(&self.queue)
    }

    /// Queues `bytes` now if there is room and nobody waits for it; else gives them back with
    /// a place in line, to be queued in turn.
    fn queue(this: &Arc<Self>, bytes: Vec<u8>) -> Option<(Vec<u8>, Turn<W>)> {
        let mut queue = this.lock();
        if queue.refusal().is_none() && queue.turn == queue.next_ticket && queue.has_room() {
            queue.append(bytes);
            return None;
        }
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        Some((
            bytes,
            Turn {
                outbox: this.clone(),
                ticket,
            },
        ))
    }

    /// Waits until the queue has room and the sends ahead in line are queued, then queues
    /// `bytes`. However this ends, `turn` passes to the next in line when it is dropped.
    async fn queue_in_turn(&self, bytes: Vec<u8>, turn: Turn<W>) -> std::io::Result<()> {
        let ticket = turn.ticket;
        loop {
            let room = self.drained.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut queue = self.lock();
                if let Some(refused) = queue.refusal() {
                    return Err(refused);
                }
                if queue.turn == ticket && queue.has_room() {
                    queue.append(bytes);
                    return Ok(());
                }
            }
            room.await;
        }
    }

    /// Writes what is queued if no send is writing already (that one takes it along).
    async fn flush(&self) -> std::io::Result<()> {
        let writer = {
            let mut queue = self.lock();
            if queue.bytes.is_empty() {
                return match queue.broken {
                    Some(kind) => Err(std::io::Error::new(kind, "the server stopped reading")),
                    None => Ok(()),
                };
            }
            match queue.writer.take() {
                Some(writer) => writer,
                None => return Ok(()),
            }
        };
        self.write_queued(writer).await
    }

    /// Writes what is queued, batch after batch, holding the writer; gives it back (or marks
    /// the peer broken) when the queue is empty.
    async fn write_queued(&self, writer: W) -> std::io::Result<()> {
        let mut holder = Holder {
            outbox: self,
            writer: Some(writer),
        };
        let mut batch = Vec::new();
        loop {
            {
                let mut queue = self.lock();
                if queue.bytes.is_empty() {
                    queue.writer = holder.writer.take();
                    drop(queue);
                    self.drained.notify_waiters();
                    return Ok(());
                }
                batch.clear();
                std::mem::swap(&mut batch, &mut queue.bytes);
            }
            self.drained.notify_waiters();
            let Some(writer) = holder.writer.as_mut() else {
                return Ok(());
            };
            let written = match writer.write_all(&batch).await {
                Ok(()) => writer.flush().await,
                Err(error) => Err(error),
            };
            if let Err(error) = written {
                let mut queue = self.lock();
                queue.broken = Some(error.kind());
                queue.bytes = Vec::new();
                holder.writer = None;
                drop(queue);
                self.drained.notify_waiters();
                return Err(error);
            }
            if batch.capacity() > KEEP_CAPACITY {
                batch = Vec::new();
            }
        }
    }

    /// No more sends; what is queued is written (while the peer reads), then the writer is
    /// shut down, so the peer reads the end of its input.
    async fn close(&self) -> std::io::Result<()> {
        let writer = loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            {
                let mut queue = self.lock();
                queue.closed = true;
                if queue.broken.is_some() {
                    queue.writer = None;
                    return Ok(());
                }
                if let Some(writer) = queue.writer.take() {
                    break writer;
                }
            }
            drained.await;
        };
        let mut writer = writer;
        let bytes = std::mem::take(&mut self.lock().bytes);
        if !bytes.is_empty() {
            writer.write_all(&bytes).await?;
        }
        writer.shutdown().await
    }
}

/// Ends a waiting send's turn however it ends (queued, refused, or dropped before its turn):
/// the next in line may queue.
struct Turn<W> {
    outbox: Arc<Outbox<W>>,
    ticket: u64,
}

impl<W> Drop for Turn<W> {
    fn drop(&mut self) {
        let mut queue = crate::sync::lock(&self.outbox.queue);
        if queue.turn == self.ticket {
            queue.advance();
        } else {
            queue.abandoned.insert(self.ticket);
        }
        drop(queue);
        self.outbox.drained.notify_waiters();
    }
}

/// Gives the writer back if the send writing with it is dropped mid-write (rmcp drops its
/// send tasks when the session ends): a later `close` still finds it and shuts it down.
struct Holder<'a, W> {
    outbox: &'a Outbox<W>,
    writer: Option<W>,
}

impl<W> Drop for Holder<'_, W> {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            let mut queue = crate::sync::lock(&self.outbox.queue);
            // Part of a message may be written: nothing more can be sent after it.
            queue.broken = Some(std::io::ErrorKind::Interrupted);
            queue.writer = Some(writer);
            drop(queue);
            self.outbox.drained.notify_waiters();
        }
    }
}

mod call_request;
mod direct;
mod skip;

pub(crate) use direct::{Direct, DirectCall};
#[cfg(test)]
mod tests;
