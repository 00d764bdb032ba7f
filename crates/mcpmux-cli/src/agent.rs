//! `mcpmux run "PROMPT" --model openai:MODEL|anthropic:MODEL`: the agent loop of mcpmux-agent
//! at the terminal. The answer streams to stdout; each tool call and its outcome, retries and
//! the usage go to stderr (with a spinner while waiting, when stderr is a terminal); a
//! `--transcript` file is continued when it exists and written back after the run.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use mcpmux::Hub;
use mcpmux_agent::provider::{self, Provider};
use mcpmux_agent::{Agent, AgentEvent, AgentOptions, StopReason, Transcript};
use tokio_util::sync::CancellationToken;

use crate::output;

/// The arguments of `mcpmux run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// What to ask the model.
    pub prompt: String,
    /// The model: `openai:MODEL` (OpenAI and compatible servers: OPENAI_BASE_URL,
    /// OPENAI_API_KEY) or `anthropic:MODEL` (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY).
    #[arg(long, short = 'm', env = "MCPMUX_MODEL", value_name = "PROVIDER:MODEL")]
    pub model: String,
    /// The system prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Most model turns (the tool loop stops after them).
    #[arg(long, default_value_t = mcpmux_agent::agent::DEFAULT_MAX_ITERATIONS, value_name = "N")]
    pub max_iterations: usize,
    /// Most tokens (input + output) the run may spend.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Only the tools of this stage and agent: `plan/coder`, `plan`, `*/coder`.
    #[arg(long, value_name = "STAGE/AGENT")]
    pub scope: Option<mcpmux::Scope>,
    /// Keep the conversation in this JSONL file: continued when it exists, written after the
    /// run.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Send every tool definition, never deferring them behind `search_tools`.
    #[arg(long)]
    pub all_tools: bool,
    /// Always send the tools matching this pattern (exposed or raw name, `*` and `?`), or
    /// every tool of a server with `SERVER:*`, when the others are deferred (repeatable).
    #[arg(long, value_name = "PATTERN")]
    pub pin: Vec<String>,
}

/// The provider `args` names, from the environment: fails before any server starts.
pub fn provider(args: &RunArgs) -> anyhow::Result<Arc<dyn Provider>> {
    let provider = provider::from_env(&args.model, |name| std::env::var(name).ok())?;
    Ok(Arc::from(provider))
}

/// What the stderr line shows while nothing streams.
#[derive(Default)]
struct Status {
    waiting: Option<String>,
    /// The model's text is streaming on the same terminal: no spinner.
    streaming: bool,
}

/// Runs the loop; `Ok(true)` when the model gave a final answer.
pub async fn run(
    hub: &Hub,
    provider: Arc<dyn Provider>,
    args: &RunArgs,
    cancel: &CancellationToken,
) -> anyhow::Result<StopReason> {
    let mut transcript = match &args.transcript {
        Some(path) if path.exists() => read_transcript(path)?,
        _ => Transcript::new(),
    };
    let mut options = AgentOptions::default().with_max_iterations(args.max_iterations);
    if let Some(system) = &args.system {
        options = options.with_system(system);
    }
    if let Some(tokens) = args.max_tokens {
        options = options.with_max_tokens(tokens);
    }
    if let Some(scope) = &args.scope {
        options = options.with_scope(scope.clone());
    }
    if args.all_tools {
        options = options.with_deferral(None);
    } else if !args.pin.is_empty() {
        let mut deferral = mcpmux_agent::DeferralOptions::default();
        for pattern in &args.pin {
            deferral = match pattern.strip_suffix(":*") {
                Some(server) => deferral.with_always_load(server),
                None => deferral.with_pinned(pattern),
            };
        }
        options = options.with_deferral(Some(deferral));
    }
    let agent = Agent::new(hub.clone(), provider, options);
    let status = Arc::new(Mutex::new(Status {
        waiting: Some("thinking".into()),
        streaming: false,
    }));
    let spinner = std::io::stderr()
        .is_terminal()
        .then(|| tokio::spawn(spin(status.clone())));
    let events = {
        let status = status.clone();
        move |event: AgentEvent| show(&status, event)
    };
    let outcome = agent
        .run_with(&mut transcript, Some(&args.prompt), &events, cancel)
        .await;
    if let Some(spinner) = spinner {
        spinner.abort();
        output::eprint_control("\r\x1b[2K");
    }
    end_text_line(&mut mcpmux::cli_support::sync::lock(&status));
    // A request that never reached a model has nothing to count.
    if outcome.iterations > 0 || outcome.tool_calls > 0 {
        output::say!(
            "mcpmux: {} turn{}, {} tool call{}, {} tokens in, {} out",
            outcome.iterations,
            plural(outcome.iterations),
            outcome.tool_calls,
            plural(outcome.tool_calls),
            outcome.usage.input_tokens,
            outcome.usage.output_tokens
        );
    }
    if let Some(path) = &args.transcript {
        write_transcript(path, &transcript)?;
    }
    Ok(outcome.stop)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Prints one event: text on stdout, the rest on stderr.
fn show(status: &Mutex<Status>, event: AgentEvent) {
    let mut status = mcpmux::cli_support::sync::lock(status);
    let clear = |status: &Status| {
        if status.waiting.is_some() && std::io::stderr().is_terminal() {
            output::eprint_control("\r\x1b[2K");
        }
    };
    match event {
        AgentEvent::Text(text) => {
            clear(&status);
            status.waiting = None;
            status.streaming = true;
            let _ = output::print_delta(&text);
        }
        AgentEvent::ToolCallStarted { .. } => {}
        AgentEvent::ToolCall {
            tool, arguments, ..
        } => {
            clear(&status);
            end_text_line(&mut status);
            output::say!("→ {tool} {}", output::first_line(&arguments, 200));
            status.waiting = Some(format!("running {tool}"));
        }
        AgentEvent::ToolResult {
            tool,
            is_error,
            text,
            ..
        } => {
            clear(&status);
            end_text_line(&mut status);
            let mark = if is_error { "✗" } else { "←" };
            output::say!("{mark} {tool}: {}", output::first_line(&text, 200));
            status.waiting = Some("thinking".into());
        }
        AgentEvent::Retrying {
            attempt,
            after,
            reason,
        } => {
            clear(&status);
            end_text_line(&mut status);
            output::say!(
                "mcpmux: model request failed ({reason}); retry {attempt} in {:.1} s",
                after.as_secs_f64()
            );
            status.waiting = Some("waiting to retry".into());
        }
        AgentEvent::Turn { .. } => {
            end_text_line(&mut status);
            status.waiting = Some("thinking".into());
        }
        _ => {}
    }
}

/// Ends a streamed text line before stderr lines are written under it.
fn end_text_line(status: &mut Status) {
    if status.streaming {
        let _ = output::print_delta("\n");
        status.streaming = false;
    }
}

async fn spin(status: Arc<Mutex<Status>>) {
    const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    for frame in 0usize.. {
        tick.tick().await;
        let line = mcpmux::cli_support::sync::lock(&status).waiting.clone();
        if let Some(what) = line.filter(|_| !output::prompting()) {
            output::eprint_control("\r\x1b[2K");
            output::eprint_text(&format!("{} {what}…", FRAMES[frame % FRAMES.len()]));
        }
    }
}

fn read_transcript(path: &Path) -> anyhow::Result<Transcript> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the transcript {}", path.display()))?;
    Transcript::read_jsonl(std::io::BufReader::new(file))
        .with_context(|| format!("{} cannot be continued", path.display()))
}

/// Writes beside the file and renames it into place: an interrupted write never leaves half
/// a conversation.
fn write_transcript(path: &Path, transcript: &Transcript) -> anyhow::Result<()> {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(folder)
        .with_context(|| format!("cannot write the transcript in {}", folder.display()))?;
    transcript.write_jsonl(std::io::BufWriter::new(file.as_file_mut()))?;
    file.persist(path)
        .with_context(|| format!("cannot write the transcript {}", path.display()))?;
    Ok(())
}
