//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, as an rmcp `Transport`.
//!
//! rmcp's own stdio transport (`AsyncRwTransport`) hides the raw lines, but several knobs need
//! them: the gate (`--era`, `--ignore-unknown`, `--never-answer-initialize`) judges a message
//! before rmcp parses it, `--garbage` writes junk between frames, `--unknown-id` writes an extra
//! response before each `tools/call` answer, `--ignore-stdin-eof` keeps the session open
//! after EOF, and `--deep-result`, `--huge-result` and `--padded-tools-list` answer with raw
//! lines (too deep for serde, too large to serialise quickly in a debug build). So this module owns the framing, and mirrors rmcp's choices where it has them:
//! unparsable lines are ignored, well-formed JSON that is no JSON-RPC message is answered with
//! Invalid Request, unparsable notifications are ignored, and lines over 16 MiB are dropped.
//! It reads stdin on a task of its own (so `receive` is cancel-safe) and uses rmcp's
//! non-blocking `stdio_pipes` when both streams are pipes.

use std::{collections::HashSet, io, sync::Arc, time::Duration};

use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage},
    transport::{StdioWriter, Transport, stdio_pipes},
};
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader},
    sync::mpsc,
};

use crate::gate::{Gate, Probe, Verdict};

/// Longest line accepted, like rmcp's `DEFAULT_MAX_LINE_LENGTH`.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Messages read ahead of rmcp.
const INCOMING_CAPACITY: usize = 64;
/// `--garbage`: written before every response.
const JUNK_LINES: &[u8] = b"this is not json\n{\"hello\":1}\n";
/// `--garbage`: the startup partial line, and its end written a little later.
const JUNK_PARTIAL: (&[u8], &[u8]) = (b"this partial line", b" ends later\n");
const JUNK_PARTIAL_DELAY: Duration = Duration::from_millis(50);
/// `--unknown-id`: a response to a request that was never issued.
const BOGUS_RESPONSE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":999999,\"result\":{}}\n";
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the stdio transport does besides moving frames.
#[derive(Debug, Clone, Copy)]
pub struct StdioOptions {
    pub gate: Gate,
    pub garbage: bool,
    pub unknown_id: bool,
    pub ignore_eof: bool,
    /// `--deep-result`: calls of `deep_result` are answered here with a raw, too-deep line.
    pub deep_result: bool,
    /// `--padded-tools-list`: `tools/list` is answered here, after this many spaces.
    pub padded_tools_list: Option<usize>,
    /// `--huge-result`: calls of `huge_result` are answered here, without serde (64 MiB
    /// through a debug build of serde_json takes seconds).
    pub huge_result: bool,
}

/// rmcp transport over this process's stdin and stdout.
pub struct StdioTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    output: Arc<Output>,
}

impl StdioTransport {
    /// Start reading stdin and, with `--garbage`, write the startup junk. Call inside a tokio
    /// runtime.
    pub async fn start(options: StdioOptions) -> io::Result<Self> {
        let (reader, writer) = stdio_pipes();
        let output = Arc::new(Output {
            writer: tokio::sync::Mutex::new(Some(writer)),
            garbage: options.garbage,
            unknown_id: options.unknown_id,
            tool_calls: std::sync::Mutex::default(),
        });
        if options.garbage {
            output.write_startup_junk().await?;
        }
        let (sender, incoming) = mpsc::channel(INCOMING_CAPACITY);
        tokio::spawn(read_loop(
            BufReader::new(reader),
            sender,
            output.clone(),
            options,
        ));
        Ok(Self { incoming, output })
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        async move { output.send(&item).await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut writer = self.output.writer.lock().await;
        if let Some(mut writer) = writer.take() {
            writer.flush().await?;
        }
        Ok(())
    }
}

/// stdout, shared by rmcp's concurrent sends and the gate's own answers.
struct Output {
    writer: tokio::sync::Mutex<Option<StdioWriter>>,
    garbage: bool,
    unknown_id: bool,
    /// Ids of `tools/call` requests not answered yet (only with `--unknown-id`).
    tool_calls: std::sync::Mutex<HashSet<RequestId>>,
}

impl Output {
    async fn send(&self, message: &ServerJsonRpcMessage) -> io::Result<()> {
        let mut frame = serde_json::to_vec(message)?;
        frame.push(b'\n');
        let is_response = matches!(
            message,
            ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
        );
        let answers_tool_call = self.unknown_id
            && match message {
                ServerJsonRpcMessage::Response(response) => self.forget_tool_call(&response.id),
                ServerJsonRpcMessage::Error(error) => error
                    .id
                    .as_ref()
                    .is_some_and(|id| self.forget_tool_call(id)),
                _ => false,
            };
        let mut writer = self.writer.lock().await;
        let writer = writer.as_mut().ok_or_else(closed)?;
        if self.garbage && is_response {
            writer.write_all(JUNK_LINES).await?;
        }
        if answers_tool_call {
            writer.write_all(BOGUS_RESPONSE).await?;
        }
        writer.write_all(&frame).await?;
        writer.flush().await
    }

    /// Writes bytes rmcp could not have produced (`--deep-result`), or not quickly.
    async fn write_raw(&self, frame: &[u8]) {
        let mut writer = self.writer.lock().await;
        let written = match writer.as_mut() {
            Some(writer) => match writer.write_all(frame).await {
                Ok(()) => writer.flush().await,
                Err(error) => Err(error),
            },
            None => Err(closed()),
        };
        if let Err(error) = written {
            tracing::error!(%error, "cannot write a raw answer to stdout");
        }
    }

    async fn write_startup_junk(&self) -> io::Result<()> {
        let mut writer = self.writer.lock().await;
        let writer = writer.as_mut().ok_or_else(closed)?;
        writer.write_all(JUNK_LINES).await?;
        writer.write_all(JUNK_PARTIAL.0).await?;
        writer.flush().await?;
        // Holding the lock: no frame can land inside the partial line.
        tokio::time::sleep(JUNK_PARTIAL_DELAY).await;
        writer.write_all(JUNK_PARTIAL.1).await?;
        writer.flush().await
    }

    fn remember_tool_call(&self, id: RequestId) {
        match self.tool_calls.lock() {
            Ok(mut ids) => ids.insert(id),
            Err(poisoned) => poisoned.into_inner().insert(id),
        };
    }

    fn forget_tool_call(&self, id: &RequestId) -> bool {
        match self.tool_calls.lock() {
            Ok(mut ids) => ids.remove(id),
            Err(poisoned) => poisoned.into_inner().remove(id),
        }
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "stdout transport is closed")
}

/// One line read from stdin.
#[derive(Debug, PartialEq)]
enum LineRead {
    Line,
    Oversized,
    Eof,
}

/// Read one `\n`-terminated line into `line` (cleared first), never buffering more than `max`
/// bytes of it. A partial line at EOF is dropped.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
    line.clear();
    let mut oversized = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(LineRead::Eof);
        }
        let newline = available.iter().position(|byte| *byte == b'\n');
        let take = newline.map_or(available.len(), |index| index + 1);
        if !oversized {
            if line.len().saturating_add(take) > max {
                oversized = true;
                line.clear();
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        reader.consume(take);
        if newline.is_some() {
            return Ok(if oversized {
                LineRead::Oversized
            } else {
                LineRead::Line
            });
        }
    }
}

/// The payload of a line: without the newline, a trailing `\r` and a leading BOM.
fn payload(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(UTF8_BOM).unwrap_or(line)
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    mut reader: R,
    sender: mpsc::Sender<ClientJsonRpcMessage>,
    output: Arc<Output>,
    options: StdioOptions,
) {
    let mut line = Vec::new();
    loop {
        match read_line(&mut reader, &mut line, MAX_LINE_BYTES).await {
            Ok(LineRead::Line) => {}
            Ok(LineRead::Oversized) => {
                tracing::error!(
                    max = MAX_LINE_BYTES,
                    "incoming line too long, discarding it"
                );
                continue;
            }
            Ok(LineRead::Eof) => break,
            Err(error) => {
                tracing::error!(%error, "cannot read stdin");
                break;
            }
        }
        let line = payload(&line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(message) = judge_line(line, &output, &options).await
            && sender.send(message).await.is_err()
        {
            // rmcp stopped serving.
            return;
        }
    }
    if options.ignore_eof {
        tracing::info!("stdin closed; staying alive until signalled (--ignore-stdin-eof)");
        // Holding `sender` keeps rmcp's session open.
        std::future::pending::<()>().await;
    }
}

/// Gate and parse one line; `Some` is a message for rmcp.
async fn judge_line(
    line: &[u8],
    output: &Output,
    options: &StdioOptions,
) -> Option<ClientJsonRpcMessage> {
    if options.deep_result
        && let Some(id) = deep_result_call(line)
    {
        output
            .write_raw(&crate::hostile::deep_result_line(&id))
            .await;
        return None;
    }
    if options.huge_result
        && let Some((id, bytes)) = huge_result_call(line)
    {
        output
            .write_raw(&crate::hostile::huge_result_line(&id, bytes))
            .await;
        return None;
    }
    if let Some(padding) = options.padded_tools_list
        && let Some(id) = method_call(line, "tools/list")
    {
        output
            .write_raw(&crate::hostile::padded_tools_list_line(&id, padding))
            .await;
        return None;
    }
    if !options.gate.is_transparent() || options.unknown_id {
        match serde_json::from_slice::<Probe<'_>>(line) {
            Ok(probe) => {
                match options.gate.judge(&probe) {
                    Verdict::Pass => {}
                    Verdict::Drop => {
                        tracing::debug!(method = ?probe.method, "dropping a message unanswered");
                        return None;
                    }
                    Verdict::Reply(error) => {
                        reply(output, error, probe.id).await;
                        return None;
                    }
                }
                if options.unknown_id
                    && probe.method.as_deref() == Some("tools/call")
                    && let Some(id) = probe.id
                {
                    output.remember_tool_call(id);
                }
            }
            Err(error) if error.is_syntax() || error.is_eof() => {
                tracing::debug!(%error, "ignoring an unparsable line");
                return None;
            }
            // Valid JSON of another shape: the typed parse below reports it.
            Err(_) => {}
        }
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => Some(message),
        Err(error) if error.is_syntax() || error.is_eof() => {
            // No id to answer, and answering junk can start an error storm (rmcp does the same).
            tracing::debug!(%error, "ignoring an unparsable line");
            None
        }
        Err(error) => {
            let probe = serde_json::from_slice::<Probe<'_>>(line).ok();
            let (method, id) = probe.map_or((None, None), |probe| (probe.method, probe.id));
            if method.is_some() && id.is_none() {
                // A notification rmcp does not model: ignore it, as rmcp does.
                tracing::debug!(%error, ?method, "ignoring an unknown notification");
                return None;
            }
            tracing::debug!(%error, "answering a malformed message with Invalid Request");
            reply(
                output,
                ErrorData::invalid_request(format!("Invalid request: {error}"), None),
                id,
            )
            .await;
            None
        }
    }
}

/// The id of a `tools/call` of `deep_result`, which `--deep-result` answers itself.
fn deep_result_call(line: &[u8]) -> Option<RequestId> {
    let message: serde_json::Value = serde_json::from_slice(line).ok()?;
    if message["method"] != "tools/call"
        || message["params"]["name"] != crate::hostile::DEEP_RESULT_TOOL
    {
        return None;
    }
    serde_json::from_value(message.get("id")?.clone()).ok()
}

/// The id and `bytes` of a `tools/call` of `huge_result`, which `--huge-result` answers itself.
fn huge_result_call(line: &[u8]) -> Option<(RequestId, usize)> {
    let message: serde_json::Value = serde_json::from_slice(line).ok()?;
    if message["method"] != "tools/call"
        || message["params"]["name"] != crate::hostile::HUGE_RESULT_TOOL
    {
        return None;
    }
    let bytes = message["params"]["arguments"]["bytes"].as_u64()?;
    let id = serde_json::from_value(message.get("id")?.clone()).ok()?;
    Some((id, usize::try_from(bytes).ok()?))
}

/// The id of a request for `method`.
fn method_call(line: &[u8], method: &str) -> Option<RequestId> {
    let message: serde_json::Value = serde_json::from_slice(line).ok()?;
    if message["method"] != method {
        return None;
    }
    serde_json::from_value(message.get("id")?.clone()).ok()
}

async fn reply(output: &Output, error: ErrorData, id: Option<RequestId>) {
    if let Err(send_error) = output.send(&ServerJsonRpcMessage::error(error, id)).await {
        tracing::error!(%send_error, "cannot write an answer to stdout");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(LineRead, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut seen = Vec::new();
        loop {
            let read = read_line(&mut reader, &mut line, max)
                .await
                .unwrap_or(LineRead::Eof);
            let done = read == LineRead::Eof;
            seen.push((read, line.clone()));
            if done {
                return seen;
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_and_bounded() {
        let seen = lines(b"{\"a\":1}\nthis line is far too long\nok\npartial", 10).await;
        let kinds: Vec<_> = seen.iter().map(|(read, _)| read).collect();
        assert_eq!(
            kinds,
            [
                &LineRead::Line,
                &LineRead::Oversized,
                &LineRead::Line,
                &LineRead::Eof
            ]
        );
        assert_eq!(seen[0].1, b"{\"a\":1}\n");
        assert_eq!(seen[2].1, b"ok\n");
    }

    #[test]
    fn payload_strips_framing() {
        assert_eq!(payload(b"\xEF\xBB\xBF{}\r\n"), b"{}");
        assert_eq!(payload(b"{}"), b"{}");
    }
}
