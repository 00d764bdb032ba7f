//! VS Code's `mcp.json` (a project's `.vscode/mcp.json`, and the default profile's in VS Code's
//! `User` folder, see `dialects::user_file`): `servers` and `inputs`.
//!
//! Fields from VS Code's MCP configuration reference
//! (code.visualstudio.com/docs/copilot/reference/mcp-configuration): `type` (`stdio`, `http`,
//! `sse`), `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`, `dev` (debugging only,
//! ignored), and the top-level `inputs` that `${input:ID}` names. VS Code asks for an input in
//! its own window and keeps the answer in its secret storage; mcpmux takes it from
//! `MCPMUX_INPUT_<ID>` or asks through [`LoadOptions`](crate::config::LoadOptions)'s input
//! callback, and stores it nowhere.

use serde_json::{Map, Value};

use super::vars::{InputFn, Inputs};
use super::{Keys, each_server, env_file, json_root, take};
use crate::config::entry::FileEntries;
use crate::config::fields::{Context, Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

const KEYS: Keys = Keys {
    // `version` and `gallery` are what VS Code writes for a server installed from its gallery.
    silent: &["dev", "description", "version", "gallery"],
    unhonoured: &[
        (
            "sandboxEnabled",
            "mcpmux runs stdio servers without VS Code's sandbox; run mcpmux itself in one",
        ),
        (
            "sandbox",
            "mcpmux runs stdio servers without VS Code's sandbox; run mcpmux itself in one",
        ),
    ],
};

/// Reads the `servers` of one VS Code `mcp.json`; `ask` answers its `${input:ID}`s.
pub(crate) fn parse(
    text: &str,
    cx: &Context<'_>,
    ask: Option<&InputFn>,
) -> Result<FileEntries, ConfigError> {
    let mut root = json_root(text, cx)?;
    let inputs = Inputs::new(cx.file.to_path_buf(), root.get("inputs"), ask);
    let cx = Context {
        inputs: Some(&inputs),
        ..*cx
    };
    let mut file = FileEntries::default();
    each_server(
        root.remove("servers"),
        "servers",
        &cx,
        &KEYS,
        &mut file,
        &server,
    );
    Ok(file)
}

fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    _warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let raw = RawTransport::take(map);
    let mut transport = fields.transport(raw)?;
    if let Some(path) = take(map, "envFile") {
        env_file(fields, path, &mut transport)?;
    }
    Ok(ServerSpec::new(fields.server(), transport))
}
