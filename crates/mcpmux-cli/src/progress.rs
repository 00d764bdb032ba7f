//! `mcpmux call`'s progress line: the server's `notifications/progress` for the call (progress,
//! total, message) drawn on stderr with indicatif while it runs, and cleared before the result
//! prints. Only on a terminal: a pipe gets none of it. The server's message is shown escaped.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcpmux::Progress;
use mcpmux::cli_support::terminal::escape_controls;
use tokio::sync::mpsc;

use crate::output;

/// The most characters of a server's progress message shown.
const MAX_MESSAGE: usize = 120;

/// A call's progress line while it lives; [`Line::finish`] clears it.
pub struct Line {
    drawing: tokio::task::JoinHandle<()>,
    bar: ProgressBar,
}

impl Line {
    /// A sender for the call's options and the line drawing what it receives; `None` when
    /// stderr is not a terminal.
    pub fn start() -> Option<(mpsc::UnboundedSender<Progress>, Line)> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let (send, mut progress) = mpsc::unbounded_channel::<Progress>();
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let drawing = {
            let bar = bar.clone();
            tokio::spawn(async move {
                while let Some(update) = progress.recv().await {
                    // A question at the terminal is not drawn over.
                    if output::prompting() {
                        continue;
                    }
                    show(&bar, &update);
                }
            })
        };
        Some((send, Line { drawing, bar }))
    }

    /// Stops drawing and clears the line.
    pub fn finish(self) {
        self.drawing.abort();
        self.bar.finish_and_clear();
    }
}

fn show(bar: &ProgressBar, update: &Progress) {
    let message = update
        .message
        .as_deref()
        .map(|m| escape_controls(&one_line(m)).into_owned())
        .unwrap_or_default();
    match update.total.filter(|t| t.is_finite() && *t > 0.0) {
        Some(total) => {
            bar.set_style(bar_style());
            // Whole steps for the bar; the true figures in the text.
            bar.set_length(total.ceil() as u64);
            bar.set_position(update.progress.clamp(0.0, total) as u64);
            bar.set_message(format!(
                "{}/{} {message}",
                figure(update.progress),
                figure(total)
            ));
        }
        None => {
            bar.set_style(spinner_style());
            bar.set_message(format!("{} {message}", figure(update.progress)));
            bar.tick();
        }
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{bar:24} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// `3` for 3.0, `2.5` for 2.5.
fn figure(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// The first line, at most [`MAX_MESSAGE`] characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(MAX_MESSAGE).collect();
    if line.chars().count() > MAX_MESSAGE {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_people_write_them() {
        assert_eq!(figure(3.0), "3");
        assert_eq!(figure(2.5), "2.5");
        assert_eq!(one_line("a\nb"), "a");
        assert_eq!(one_line(&"x".repeat(200)).chars().count(), MAX_MESSAGE + 1);
    }
}
