//! Variables as the editors and Gemini CLI write them. Cursor, VS Code and Windsurf:
//! `${env:NAME}`, `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`,
//! `${pathSeparator}` (or `${/}`) and, in VS Code, `${input:ID}`. Gemini CLI: `$NAME` and
//! `${NAME}`, an unset one kept as written (as Gemini CLI does).
//!
//! Sources: VS Code's variables reference (code.visualstudio.com/docs/reference/variables-reference)
//! and MCP configuration reference (code.visualstudio.com/docs/copilot/reference/mcp-configuration),
//! Cursor's MCP docs (cursor.com/docs/context/mcp, "Config interpolation"), Windsurf's MCP docs
//! (docs.windsurf.com/windsurf/cascade/mcp), Gemini CLI's configuration docs
//! (geminicli.com/docs/cli/configuration, "environment variables in settings").
//!
//! Knows nothing of files or entries beyond the [`Context`] it is given; its errors are plain
//! messages that `fields.rs` turns into a problem naming the file, server and field. An
//! input's answer is never logged and never written anywhere.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::config::Dialect;

/// What a value is expanded against: the file's dialect and place, the environment, and the
/// file's `inputs`.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The file being read.
    pub file: &'a std::path::Path,
    /// Its dialect: which syntax applies.
    pub dialect: Dialect,
    /// Looks up environment variables.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `${userHome}`.
    pub home: Option<&'a std::path::Path>,
    /// `${workspaceFolder}`.
    pub workspace: &'a std::path::Path,
    /// `${input:ID}` answers (VS Code).
    pub inputs: Option<&'a Inputs<'a>>,
}

/// Answers one `${input:ID}` of a VS Code file: the CLI asks at the terminal (hidden when
/// `password` is set); `None` leaves it unanswered.
pub type InputFn = Arc<dyn Fn(&InputRequest) -> Option<String> + Send + Sync>;

/// One `${input:ID}` to answer, as the file's `inputs` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputRequest {
    /// The input's `id`.
    pub id: String,
    /// Its `description`, what to show the person (control characters escaped).
    pub description: String,
    /// `password: true`: the answer is a secret and must not be echoed.
    pub password: bool,
    /// The file that declares it.
    pub file: PathBuf,
    /// The variable that answers it without asking (`MCPMUX_INPUT_<ID>`).
    pub variable: String,
}

/// Longest piece of a file's own text repeated in a message.
const MAX_SHOWN: usize = 60;

/// The `inputs` of one VS Code file and the answers given so far in this load (each input is
/// asked at most once, however many servers use it).
pub(crate) struct Inputs<'a> {
    file: PathBuf,
    declared: BTreeMap<String, (String, bool)>,
    ask: Option<&'a InputFn>,
    answers: RefCell<BTreeMap<String, Option<String>>>,
}

impl<'a> Inputs<'a> {
    /// The inputs the file's `inputs` array declares; entries without an `id` are skipped
    /// (a `${input:…}` naming them is then an error that says so).
    pub fn new(file: PathBuf, inputs: Option<&Value>, ask: Option<&'a InputFn>) -> Self {
        let mut declared = BTreeMap::new();
        if let Some(Value::Array(items)) = inputs {
            for item in items {
                let Some(id) = item.get("id").and_then(Value::as_str) else {
                    continue;
                };
                let description = item
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or(id)
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .take(300)
                    .collect();
                let password = item.get("password") == Some(&Value::Bool(true));
                declared.insert(id.to_owned(), (description, password));
            }
        }
        Inputs {
            file,
            declared,
            ask,
            answers: RefCell::new(BTreeMap::new()),
        }
    }

    fn answer(&self, id: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        let variable = input_variable(id);
        if let Some(value) = env(&variable) {
            return Ok(value);
        }
        let Some((description, password)) = self.declared.get(id) else {
            return Err(format!(
                "uses ${{input:{}}}, which \"inputs\" does not declare: declare it there, or set {variable}",
                shown(id)
            ));
        };
        if let Some(answer) = self.answers.borrow().get(id) {
            return answer.clone().ok_or_else(|| unanswered(id, &variable));
        }
        let answer = self.ask.and_then(|ask| {
            ask(&InputRequest {
                id: id.to_owned(),
                description: description.clone(),
                password: *password,
                file: self.file.clone(),
                variable: variable.clone(),
            })
        });
        self.answers
            .borrow_mut()
            .insert(id.to_owned(), answer.clone());
        answer.ok_or_else(|| unanswered(id, &variable))
    }
}

fn unanswered(id: &str, variable: &str) -> String {
    format!(
        "uses ${{input:{}}}, which has no answer: set {variable}, or run mcpmux at a terminal to be asked",
        shown(id)
    )
}

/// `MCPMUX_INPUT_<ID>`: the id upper-cased, anything but letters and digits as `_`.
pub fn input_variable(id: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("MCPMUX_INPUT_{id}")
}

/// Text from the file, cut and with control characters escaped, for a message.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_SHOWN)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > MAX_SHOWN {
        out.push('…');
    }
    out
}

/// Expands `text` as `cx.dialect` does.
pub(crate) fn expand(text: &str, cx: &Context<'_>) -> Result<String, String> {
    if !text.contains('$') {
        return Ok(text.to_owned());
    }
    match cx.dialect {
        Dialect::Gemini => Ok(gemini(text, cx)),
        _ => editor(text, cx),
    }
}

/// `${…}` references of Cursor, VS Code and Windsurf; a `$` before anything else is text.
fn editor(text: &str, cx: &Context<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let body_and_tail = &rest[start + 2..];
        let Some(close) = body_and_tail.find('}') else {
            return Err("\"${\" has no closing \"}\": write ${env:NAME}".to_owned());
        };
        out.push_str(&editor_variable(&body_and_tail[..close], cx)?);
        rest = &body_and_tail[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn editor_variable(body: &str, cx: &Context<'_>) -> Result<String, String> {
    if let Some(name) = body.strip_prefix("env:") {
        return match (cx.env)(name) {
            Some(value) => Ok(value),
            // VS Code resolves an unset variable to empty text; Cursor and Windsurf do not say,
            // and an empty token is a worse surprise than a clear refusal.
            None if cx.dialect == Dialect::VsCode => Ok(String::new()),
            None => Err(format!(
                "uses ${{env:{}}}, which is not set: set {} in the environment",
                shown(name),
                shown(name)
            )),
        };
    }
    if let Some(id) = body.strip_prefix("input:") {
        return match (cx.dialect, cx.inputs) {
            (Dialect::VsCode, Some(inputs)) => inputs.answer(id, cx.env),
            _ => Err(format!(
                "uses ${{input:{}}}, which only VS Code's files have: use ${{env:NAME}}",
                shown(id)
            )),
        };
    }
    let workspace = || std::path::absolute(cx.workspace).unwrap_or(cx.workspace.to_path_buf());
    match body {
        "workspaceFolder" | "workspaceRoot" => Ok(workspace().display().to_string()),
        "workspaceFolderBasename" => Ok(workspace()
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()),
        "userHome" => cx
            .home
            .map(|home| home.display().to_string())
            .ok_or_else(|| {
                "uses ${userHome} but the home directory is unknown: set HOME".to_owned()
            }),
        "pathSeparator" | "/" => Ok(std::path::MAIN_SEPARATOR_STR.to_owned()),
        other => Err(format!(
            "\"${{{}}}\" is not a variable mcpmux can resolve: use ${{env:NAME}}, ${{workspaceFolder}}, ${{workspaceFolderBasename}}, ${{userHome}} or ${{pathSeparator}}{}",
            shown(other),
            if cx.dialect == Dialect::VsCode {
                ", or ${input:ID}"
            } else {
                ""
            }
        )),
    }
}

/// Gemini CLI's `$NAME` and `${NAME}`: set ones replaced, unset ones kept as written.
fn gemini(text: &str, cx: &Context<'_>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, written, tail) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(close) if close > 0 => (
                    &braced[..close],
                    &rest[dollar..dollar + close + 3],
                    &braced[close + 1..],
                ),
                _ => ("", "$", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (
                &after[..end],
                &rest[dollar..dollar + 1 + end],
                &after[end..],
            )
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        match (cx.env)(name) {
            Some(value) => out.push_str(&value),
            None => {
                tracing::warn!(file = %cx.file.display(), variable = %shown(name), "variable not set: kept as written, as Gemini CLI does");
                out.push_str(written);
            }
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::path::Path;

    fn cx<'a>(
        dialect: Dialect,
        env: &'a dyn Fn(&str) -> Option<String>,
        inputs: Option<&'a Inputs<'a>>,
    ) -> Context<'a> {
        Context {
            file: Path::new("/p/.vscode/mcp.json"),
            dialect,
            env,
            home: Some(Path::new("/home/me")),
            workspace: Path::new("/p/work"),
            inputs,
        }
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".into()),
            "MCPMUX_INPUT_API_KEY" => Some("from-env".into()),
            _ => None,
        }
    }

    #[test]
    fn editor_variables_resolve() {
        let cx = cx(Dialect::Cursor, &env, None);
        assert_eq!(
            expand(
                "${workspaceFolder}/x:${userHome}:${env:TOKEN}:${workspaceFolderBasename}${/}",
                &cx
            ),
            Ok("/p/work/x:/home/me:t0k:work/".to_owned())
        );
        assert_eq!(expand("$HOME $x", &cx), Ok("$HOME $x".to_owned()));
        assert!(expand("${env:NOPE}", &cx).unwrap_err().contains("NOPE"));
        assert!(
            expand("${command:x}", &cx)
                .unwrap_err()
                .contains("not a variable")
        );
        assert!(
            expand("${input:x}", &cx)
                .unwrap_err()
                .contains("only VS Code")
        );
        assert!(expand("${env:TOKEN", &cx).is_err());
    }

    #[test]
    fn vscode_unset_env_is_empty_as_in_vs_code() {
        let cx = cx(Dialect::VsCode, &env, None);
        assert_eq!(expand("a${env:NOPE}b", &cx), Ok("ab".to_owned()));
    }

    #[test]
    fn gemini_keeps_unset_variables_as_written() {
        let cx = cx(Dialect::Gemini, &env, None);
        assert_eq!(
            expand("$TOKEN ${TOKEN} $NOPE ${NOPE} $ ${} 5$", &cx),
            Ok("t0k t0k $NOPE ${NOPE} $ ${} 5$".to_owned())
        );
    }

    #[test]
    fn inputs_come_from_the_variable_then_the_callback_once() {
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = asked.clone();
        let ask: InputFn = Arc::new(move |request: &InputRequest| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            assert!(request.password);
            assert_eq!(request.variable, "MCPMUX_INPUT_DB_PASS");
            Some("typed".to_owned())
        });
        let declared = serde_json::json!([
            {"type": "promptString", "id": "api-key", "description": "Key"},
            {"type": "promptString", "id": "db.pass", "description": "DB", "password": true}
        ]);
        let inputs = Inputs::new(
            PathBuf::from("/p/.vscode/mcp.json"),
            Some(&declared),
            Some(&ask),
        );
        let cx = cx(Dialect::VsCode, &env, Some(&inputs));
        assert_eq!(expand("${input:api-key}", &cx), Ok("from-env".to_owned()));
        assert_eq!(
            expand("${input:db.pass}/${input:db.pass}", &cx),
            Ok("typed/typed".to_owned())
        );
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(
            expand("${input:other}", &cx)
                .unwrap_err()
                .contains("does not declare")
        );
    }
}
