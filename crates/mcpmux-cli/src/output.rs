//! Tables and JSON for people and scripts, and the one place that decides how text reaches
//! them: on a terminal, control characters from servers are shown escaped (an OSC sequence in
//! a tool result must not retitle or clear the person's terminal); a pipe, or `--raw`, gets the
//! bytes as they are.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use mcpmux::cli_support::terminal::{escape_controls, escape_json_controls};
use mcpmux::{Content, ServerState, ServerStatus, Tool, ToolResult};

/// Whether stdout and stderr escape control characters; set once by [`init`].
static ESCAPE: OnceLock<(bool, bool)> = OnceLock::new();

/// Decides, once, how output is written: escaped on a terminal unless `raw`, as is in a pipe.
pub fn init(raw: bool) {
    let _ = ESCAPE.set((
        !raw && std::io::stdout().is_terminal(),
        !raw && std::io::stderr().is_terminal(),
    ));
}

fn escaping() -> (bool, bool) {
    ESCAPE.get().copied().unwrap_or((false, false))
}

/// Writes to stdout; a reader that went away (`mcpmux tools | head -1`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    let text = if escaping().0 {
        escape_controls(text)
    } else {
        text.into()
    };
    emit_raw(&text)
}

fn emit_raw(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Writes `text` to stderr, escaped when stderr is a terminal (see [`init`]).
pub fn eprint_text(text: &str) {
    let text = if escaping().1 {
        escape_controls(text)
    } else {
        text.into()
    };
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Writes our own terminal control (`\r\x1b[2K` clears the line) to stderr, unescaped: never
/// for anyone else's text.
pub fn eprint_control(control: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(control.as_bytes()).and_then(|()| err.flush());
}

/// `eprintln!` for text that may carry a server's words: escaped when stderr is a terminal.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::eprint_text(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;

/// `println!` that ends quietly when stdout's reader went away (`mcpmux secret list | head -1`),
/// where `println!` panics: a `Result` for `?`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print_text(&format!($($arg)*))
    };
}
pub(crate) use out;

/// Prints any serialisable value as pretty JSON on stdout (on a terminal, control characters
/// JSON leaves raw are written as `\uXXXX`, which parses to the same value).
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    if escaping().0 {
        let mut text = serde_json::to_string_pretty(value)?;
        text.push('\n');
        return emit_raw(&escape_json_controls(&text));
    }
    // Written as it is made: a listing of many servers never holds its whole text as well.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Prints on stdout, as [`print_json`] prints a list, the values `fill` hands to its
/// writer one at a time: the same bytes, without holding the list (a listing of 100 servers
/// holds one server's tools at a time). On a terminal, each value's text is escaped as
/// [`print_json`] escapes the whole. A reader that went away is not an error.
pub fn print_json_list<T: serde::Serialize, R>(
    fill: impl FnOnce(&mut dyn FnMut(&T) -> std::io::Result<()>) -> std::io::Result<R>,
) -> anyhow::Result<Option<R>> {
    use serde::ser::{SerializeSeq, Serializer};
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let escape = escaping().0;
    let written: std::io::Result<R> = (|| {
        let mut ser = serde_json::Serializer::pretty(Escaping {
            out: &mut out,
            escape,
        });
        let mut seq = ser.serialize_seq(None)?;
        let filled = fill(&mut |value| Ok(seq.serialize_element(value)?))?;
        seq.end()?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(filled)
    })();
    match written {
        Ok(filled) => Ok(Some(filled)),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A writer that escapes JSON text's control characters as [`escape_json_controls`] does,
/// when `escape`: each piece serde_json writes is a whole token or punctuation, and escaping
/// works character by character, so the pieces escaped are the whole escaped.
struct Escaping<'a, W: Write> {
    out: &'a mut W,
    escape: bool,
}

impl<W: Write> Write for Escaping<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match std::str::from_utf8(buf) {
            Ok(text) if self.escape => self.out.write_all(escape_json_controls(text).as_bytes()),
            _ => self.out.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Prints text we wrote ourselves (a completion script, a man page) on stdout, as it is.
pub fn print_raw(text: &str) -> anyhow::Result<()> {
    emit_raw(text)
}

/// Prints a piece of streamed text on stdout, as it comes (no newline added).
pub fn print_delta(text: &str) -> anyhow::Result<()> {
    emit(text)
}

/// Set while a question waits for an answer at the terminal: nothing redraws over it.
static PROMPTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Marks the start or end of a question at the terminal.
pub fn set_prompting(on: bool) {
    PROMPTING.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Whether a question waits for an answer at the terminal.
pub fn prompting() -> bool {
    PROMPTING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Prints text and a newline on stdout.
pub fn print_text(text: &str) -> anyhow::Result<()> {
    emit(&format!("{text}\n"))
}

/// Whether stdout is a terminal (a person reads it) rather than a pipe or file (a program does).
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// A tool result as `mcpmux call` prints it. A pipe gets `to_text()` as it always has (scripts
/// parse it). A person on a terminal gets the structured content pretty-printed: in place of
/// the text block that only repeats it as JSON (what servers send older clients), after the
/// text otherwise, so a structured answer is never hidden behind its summary.
pub fn call_result_text(result: &ToolResult, terminal: bool) -> String {
    let Some(structured) = result.structured_content.as_ref().filter(|_| terminal) else {
        return result.to_text();
    };
    let pretty =
        serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
    let repeats = |block: &Content| match block {
        Content::Text { text } => {
            serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| &v == structured)
        }
        _ => false,
    };
    match result.content.as_slice() {
        [] => pretty,
        [only] if repeats(only) => pretty,
        _ => format!(
            "{}

{pretty}",
            result.to_text()
        ),
    }
}

fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}

/// The first line of `text`, at most `max` characters, `…` where anything was left out: a
/// server's or a model's words shown in one line of a message.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// Rows as left-aligned columns; the last cell of each row is not padded.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What a person runs to log in to `server`.
pub fn login_advice(server: &str) -> String {
    format!("run `mcpmux auth login {server}`")
}

/// The error of a server as a person at this terminal reads it: the library's words, and for a
/// server waiting for a login, the command that does it.
fn error_for_people(s: &ServerStatus) -> Option<String> {
    let error = s.error()?;
    Some(match s.state {
        ServerState::NeedsAuth { login: true, .. } => {
            format!("{error}; {}", login_advice(&s.name))
        }
        _ => error.to_string(),
    })
}

/// `mcpmux servers --json`: the library's records, with the errors worded for people.
pub fn print_servers_json(servers: &[ServerStatus]) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(servers)?;
    if let Some(entries) = value.as_array_mut() {
        for (entry, status) in entries.iter_mut().zip(servers) {
            if let Some(error) = error_for_people(status) {
                entry["error"] = serde_json::Value::String(error);
            }
        }
    }
    print_json(&value)
}

/// `mcpmux servers` as a table.
pub fn print_servers(servers: &[ServerStatus]) -> anyhow::Result<()> {
    let mut rows = vec![vec![
        "NAME".to_string(),
        "TRANSPORT".into(),
        "ERA/VERSION".into(),
        "STATE".into(),
        "TOOLS".into(),
        "SOURCE".into(),
        "ERROR".into(),
    ]];
    for s in servers {
        let era = match (&s.era, &s.version) {
            (Some(era), Some(version)) => format!("{era}/{version}"),
            _ => "-".into(),
        };
        rows.push(vec![
            s.name.clone(),
            s.transport.clone(),
            era,
            s.state.label().to_string(),
            match s.cached {
                Some(_) => format!("{} (cached)", s.tools),
                None => s.tools.to_string(),
            },
            source_cell(s),
            // The whole message of a server waiting for a login: it ends with the command.
            error_for_people(s)
                .map(|e| match s.state {
                    ServerState::NeedsAuth { .. } | ServerState::Untrusted { .. } => {
                        one_line(&e, usize::MAX)
                    }
                    // A config entry that could not be used: its fix is at the end (still cut: a
                    // hostile file's value may be quoted in it).
                    _ if s.transport == "-" => one_line(&e, 400),
                    _ => one_line(&e, 100),
                })
                .unwrap_or_default(),
        ]);
    }
    let mut text = table(&rows);
    // Where each plugin server comes from (the library marks their source `plugin …`): a
    // duplicate's row already names the server that kept it.
    let from_plugins: Vec<&ServerStatus> = servers
        .iter()
        .filter(|s| {
            s.source
                .as_deref()
                .is_some_and(|source| source.starts_with("plugin "))
        })
        .collect();
    if !from_plugins.is_empty() {
        text.push_str("\nfrom plugins:\n");
        for s in from_plugins {
            let source = s.source.as_deref().unwrap_or_default();
            text.push_str(&format!("  {}: {}\n", s.name, one_line(source, 200)));
        }
    }
    let sandboxed: Vec<&ServerStatus> = servers.iter().filter(|s| s.sandbox.is_some()).collect();
    if !sandboxed.is_empty() {
        text.push_str("\nsandboxed:\n");
        for s in sandboxed {
            let sandbox = s.sandbox.as_deref().unwrap_or_default();
            text.push_str(&format!("  {}: {sandbox}\n", s.name));
        }
    }
    for s in servers {
        for warning in &s.warnings {
            text.push_str(&format!("warning: {}\n", one_line(warning, 400)));
        }
    }
    for s in servers {
        if let ServerState::Failed { stderr_tail, .. } = &s.state
            && !stderr_tail.is_empty()
        {
            text.push_str(&format!("\n{} stderr (last lines):\n", s.name));
            for line in stderr_tail.iter().rev().take(5).rev() {
                text.push_str(&format!("  {line}\n"));
            }
        }
    }
    emit(&text)
}

/// Where a server is configured: its file (the home folder as `~`) and the file's dialect.
fn source_cell(s: &ServerStatus) -> String {
    let Some(source) = &s.source else {
        return "-".into();
    };
    let home = std::env::var("HOME").unwrap_or_default();
    let shown = match source.strip_prefix(&home) {
        Some(rest) if !home.is_empty() && rest.starts_with('/') => format!("~{rest}"),
        _ => source.clone(),
    };
    match &s.dialect {
        Some(dialect) => format!("{shown} ({dialect})"),
        None => shown,
    }
}

/// `mcpmux tools` as a table.
pub fn print_tools(tools: &[&Tool]) -> anyhow::Result<()> {
    let mut rows = vec![vec!["TOOL".to_string(), "DESCRIPTION".into()]];
    for t in tools {
        let about = match &t.unusable {
            Some(reason) => format!("UNUSABLE: {}", one_line(reason, 200)),
            None => one_line(t.description.as_deref().unwrap_or(""), 80),
        };
        rows.push(vec![t.name.clone(), about]);
    }
    emit(&table(&rows))
}

/// Says on stderr which tools cannot be called and why (their schema is beyond the hub's
/// bounds); `(tool, reason)` pairs.
pub fn warn_unusable<'a>(tools: impl IntoIterator<Item = (&'a str, &'a str)>) {
    for (tool, reason) in tools {
        eprintln!(
            "mcpmux: tool `{tool}` cannot be called: {}",
            one_line(reason, 300)
        );
    }
}

/// Says on stderr which listed tools come from the tool cache, of which servers and how old,
/// and how to ask the servers instead.
pub fn note_cached(tools: &[&Tool], servers: &[ServerStatus]) {
    let mut from_cache: Vec<(&str, std::time::SystemTime)> = Vec::new();
    for s in servers {
        if let Some((listed_at, _)) = &s.cached
            && tools.iter().any(|t| t.cached && t.server == s.name)
        {
            from_cache.push((&s.name, *listed_at));
        }
    }
    note_from_cache(&from_cache);
}

/// [`note_cached`] of the servers named, each with when its cached list was made.
pub fn note_from_cache(from_cache: &[(&str, std::time::SystemTime)]) {
    if from_cache.is_empty() {
        return;
    }
    let oldest = from_cache
        .iter()
        .map(|(_, at)| at.elapsed().unwrap_or_default())
        .max()
        .unwrap_or_default();
    let names: Vec<&str> = from_cache.iter().map(|(name, _)| *name).collect();
    say!(
        "mcpmux: the tools of {} are from the tool cache (listed up to {} ago; those servers start on first use); --no-cache asks them now",
        mcpmux::cli_support::terminal::escape_controls(&names.join(", ")),
        age(oldest)
    );
}

/// `42s`, `5m`, `3h`: how long ago, roughly.
fn age(elapsed: std::time::Duration) -> String {
    let secs = elapsed.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        _ => format!("{}h", secs / 3600),
    }
}

/// Says on stderr which servers' tools are missing and why.
pub fn warn_unavailable(servers: &[ServerStatus]) {
    warn_unavailable_besides(servers, "");
}

/// [`warn_unavailable`], leaving out the line that would repeat `already` (an error about to
/// be printed that says the same).
pub fn warn_unavailable_besides(servers: &[ServerStatus], already: &str) {
    for s in servers {
        if let Some(error) = s.error()
            && s.state.label() != "disabled"
        {
            let line = format!(
                "server `{}` is {}: {}",
                s.name,
                s.state.label(),
                one_line(error, 200)
            );
            if line != already {
                say!("mcpmux: {line}");
            }
        }
    }
}

/// A plain aligned table on stdout (the last column is cut to one line), or `empty` on
/// stderr when there are no rows.
pub fn print_rows<const N: usize>(
    header: [&str; N],
    rows: &[[&str; N]],
    empty: &str,
) -> anyhow::Result<()> {
    if rows.is_empty() {
        say!("mcpmux: {empty}");
        return Ok(());
    }
    let cell = |text: &str| text.lines().next().unwrap_or("").trim().to_string();
    let all: Vec<Vec<String>> = std::iter::once(header.map(str::to_string).to_vec())
        .chain(rows.iter().map(|row| row.map(cell).to_vec()))
        .collect();
    let widths: Vec<usize> = (0..N)
        .map(|i| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &all {
        let mut line = String::new();
        for (i, value) in row.iter().enumerate() {
            if i + 1 == N {
                line.push_str(value);
            } else {
                line.push_str(&format!("{value:<width$}  ", width = widths[i]));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    print_text(text.trim_end())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn structured(content: Vec<Content>, value: serde_json::Value) -> ToolResult {
        let mut result = ToolResult::text("");
        result.content = content;
        result.structured_content = Some(value);
        result
    }

    fn text(text: &str) -> Content {
        Content::Text { text: text.into() }
    }

    #[test]
    fn a_pipe_gets_the_result_text_as_it_always_has() {
        let result = structured(vec![text("5")], json!({"sum": 5}));
        assert_eq!(call_result_text(&result, false), "5");
        let bare = structured(vec![], json!({"sum": 5, "parts": [2, 3]}));
        assert_eq!(call_result_text(&bare, false), r#"{"parts":[2,3],"sum":5}"#);
    }

    #[test]
    fn a_terminal_gets_structured_content_pretty_after_its_summary_or_in_place_of_its_copy() {
        let pretty = "{\n  \"sum\": 5\n}";
        let summary = structured(vec![text("5")], json!({"sum": 5}));
        assert_eq!(call_result_text(&summary, true), format!("5\n\n{pretty}"));
        let copy = structured(vec![text(r#"{"sum":5}"#)], json!({"sum": 5}));
        assert_eq!(call_result_text(&copy, true), pretty);
        let bare = structured(vec![], json!({"sum": 5}));
        assert_eq!(call_result_text(&bare, true), pretty);
        let plain = ToolResult::text("hello");
        assert_eq!(call_result_text(&plain, true), "hello");
    }

    use super::*;

    #[test]
    fn tables_align_columns() {
        let text = table(&[
            vec!["A".into(), "B".into()],
            vec!["long".into(), "x".into()],
        ]);
        assert_eq!(text, "A     B\nlong  x\n");
    }

    #[test]
    fn first_line_keeps_one_line_and_marks_what_it_left_out() {
        assert_eq!(first_line("short", 10), "short");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("one\ntwo", 10), "one…");
        assert_eq!(first_line("", 10), "");
    }

    #[test]
    fn long_cells_are_cut_to_one_line() {
        assert_eq!(one_line("first\nsecond", 10), "first");
        assert_eq!(one_line("abcdefghijkl", 5), "abcd…");
    }
}
