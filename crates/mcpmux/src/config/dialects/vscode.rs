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

use super::{Keys, Reader};

/// How mcpmux reads one VS Code `mcp.json`: its `servers`, with its `inputs` for their `${input:ID}`s.
pub(crate) const READER: Reader = Reader {
    field: "servers",
    keys: Keys {
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
    },
    // VS Code's entries read as Cursor's: the transport fields and `envFile`.
    read: super::cursor::server,
};
