//! Tables and JSON for people and scripts.

use std::io::Write;

use mcpmux::{ServerState, ServerStatus, Tool};

/// Writes to stdout; a reader that went away (`mcpmux tools | head -1`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Prints any serialisable value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    emit(&text)
}

/// Prints text and a newline on stdout.
pub fn print_text(text: &str) -> anyhow::Result<()> {
    emit(&format!("{text}\n"))
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

/// `mcpmux servers` as a table.
pub fn print_servers(servers: &[ServerStatus]) -> anyhow::Result<()> {
    let mut rows = vec![vec![
        "NAME".to_string(),
        "TRANSPORT".into(),
        "ERA/VERSION".into(),
        "STATE".into(),
        "TOOLS".into(),
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
            s.tools.to_string(),
            // The whole message of a server waiting for a login: it ends with the command.
            s.error()
                .map(|e| match s.state {
                    ServerState::NeedsAuth { .. } | ServerState::Untrusted { .. } => {
                        one_line(e, usize::MAX)
                    }
                    _ => one_line(e, 100),
                })
                .unwrap_or_default(),
        ]);
    }
    let mut text = table(&rows);
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

/// `mcpmux tools` as a table.
pub fn print_tools(tools: &[Tool]) -> anyhow::Result<()> {
    let mut rows = vec![vec!["TOOL".to_string(), "DESCRIPTION".into()]];
    for t in tools {
        rows.push(vec![
            t.name.clone(),
            one_line(t.description.as_deref().unwrap_or(""), 80),
        ]);
    }
    emit(&table(&rows))
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
                eprintln!("mcpmux: {line}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn long_cells_are_cut_to_one_line() {
        assert_eq!(one_line("first\nsecond", 10), "first");
        assert_eq!(one_line("abcdefghijkl", 5), "abcd…");
    }
}
