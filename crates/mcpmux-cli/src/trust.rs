//! `mcpmux trust`: approve the current project's own servers as they are now, or withdraw the
//! approval; and the `[y/N]` question asked on a terminal about a project server not approved.
//!
//! The decision, the entry hashes and the approvals file are the library's
//! (`mcpmux::config::approve`); this module only prints and asks. It starts no server.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use mcpmux::ConfigSet;
use mcpmux::config::ProjectEntry;

/// Approves every server the project's files define, as they are now, or (`revoke`) withdraws
/// every approval of the project.
pub fn run(config: &ConfigSet, project: &Path, revoke: bool) -> anyhow::Result<()> {
    let store = config.trust_file.as_deref().context(
        "the home directory is unknown, so there is no place to keep approvals: set HOME",
    )?;
    if revoke {
        if mcpmux::cli_support::trust::revoke(store, project)? {
            crate::output::out!(
                "withdrew the approval of the servers of {}; they will not be started until approved again",
                project.display()
            )?;
        } else {
            crate::output::out!("nothing was approved for {}", project.display())?;
        }
        return Ok(());
    }
    if config.project.is_empty() {
        crate::output::out!(
            "no project-level servers in {} (.mcp.json, .claude/settings.json, mcpmux.toml, and imported tools' files): nothing to approve",
            project.display()
        )?;
        return Ok(());
    }
    mcpmux::cli_support::trust::approve(store, project, &config.project)?;
    crate::output::out!("approved the servers of {}:", project.display())?;
    for entry in &config.project {
        crate::output::out!("  {entry}\n    defined in: {}", entry.file.display())?;
    }
    crate::output::out!(
        "a server changed later needs approval again; `mcpmux trust --revoke` withdraws"
    )?;
    Ok(())
}

/// Entries approved at the `[y/N]` question, to be stored once loading is done.
pub type Answers = Arc<Mutex<Vec<ProjectEntry>>>;

/// On a terminal: a question per project server no stored approval covers. Without one, none
/// (such servers stay `untrusted`; nothing is ever started without the person's yes).
pub fn asker(answers: &Answers) -> Option<impl Fn(&ProjectEntry) -> bool + Send + Sync + 'static> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    let answers = Arc::clone(answers);
    Some(move |entry: &ProjectEntry| {
        eprint!(
            "mcpmux: {} defines a server not approved yet:\n  {entry}\nstart it (and remember the answer)? [y/N] ",
            entry.file.display()
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let yes = std::io::stdin().read_line(&mut line).is_ok()
            && matches!(line.trim(), "y" | "Y" | "yes");
        if yes && let Ok(mut answers) = answers.lock() {
            answers.push(entry.clone());
        }
        yes
    })
}

/// Stores the entries approved at the question.
pub fn remember(config: &ConfigSet, project: &Path, answers: &Answers) {
    let Ok(answers) = answers.lock() else {
        return;
    };
    let Some(store) = config.trust_file.as_deref() else {
        return;
    };
    for entry in answers.iter() {
        if let Err(e) = mcpmux::cli_support::trust::approve_one(store, project, entry) {
            eprintln!(
                "mcpmux: the approval of `{}` is not remembered: {e}",
                entry.name
            );
        }
    }
}

/// On a terminal: asks for a VS Code `${input:ID}` no `MCPMUX_INPUT_<ID>` answers, hiding
/// what is typed for a `password` input. Without a terminal, none: the server is a problem
/// that names the variable to set.
pub fn input_prompt()
-> Option<impl Fn(&mcpmux::config::InputRequest) -> Option<String> + Send + Sync + 'static> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    Some(|request: &mcpmux::config::InputRequest| {
        let question = format!(
            "mcpmux: {} asks for {} (input `{}`; set {} to skip this question): ",
            request.file.display(),
            request.description,
            request.id,
            request.variable
        );
        let answer = if request.password {
            rpassword::prompt_password(
                mcpmux::cli_support::terminal::escape_controls(&question).as_ref(),
            )
        } else {
            crate::output::eprint_text(&question);
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        };
        answer
            .ok()
            .map(|line| line.trim_end_matches(['\r', '\n']).to_owned())
    })
}
