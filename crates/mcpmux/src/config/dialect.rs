//! The config-file dialects: mcpmux's own, Claude Code's, and the other tools' files read when
//! imported; their names as people write them in `import` lists and see them in `mcpmux servers`.
//!
//! Knows nothing of files or how each dialect is read (`claude.rs`, `mcpmux_toml.rs`,
//! `dialects/`).

use std::fmt;

/// The config-file dialects mcpmux reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// Claude Code's JSON (`.mcp.json`, `~/.claude.json`, `settings.json`): `mcpServers`.
    Claude,
    /// mcpmux's own TOML with `[servers.NAME]` tables.
    Mcpmux,
    /// OpenAI Codex's TOML (`~/.codex/config.toml`): `[mcp_servers.NAME]`; imported on request.
    Codex,
    /// Cursor's JSON (`~/.cursor/mcp.json`, `.cursor/mcp.json`): `mcpServers`; imported on request.
    Cursor,
    /// VS Code's JSON (`.vscode/mcp.json`): `servers` and `inputs`; imported on request.
    VsCode,
    /// Gemini CLI's JSON (`~/.gemini/settings.json`, `.gemini/settings.json`): `mcpServers`;
    /// imported on request.
    Gemini,
    /// Windsurf's JSON (`~/.codeium/windsurf/mcp_config.json`): `mcpServers`; imported on request.
    Windsurf,
    /// Claude Desktop's JSON (`claude_desktop_config.json` in its settings folder):
    /// `mcpServers`; imported on request.
    ClaudeDesktop,
}

impl Dialect {
    /// The dialects of other tools, read only when imported (`import = [...]`, `--import`),
    /// in the order their files are read.
    pub const IMPORTABLE: &'static [Dialect] = &[
        Dialect::Codex,
        Dialect::Cursor,
        Dialect::VsCode,
        Dialect::Gemini,
        Dialect::Windsurf,
        Dialect::ClaudeDesktop,
    ];

    /// The short name shown in `mcpmux servers` and written in `import` lists.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Claude => "claude",
            Dialect::Mcpmux => "mcpmux",
            Dialect::Codex => "codex",
            Dialect::Cursor => "cursor",
            Dialect::VsCode => "vscode",
            Dialect::Gemini => "gemini",
            Dialect::Windsurf => "windsurf",
            Dialect::ClaudeDesktop => "claude-desktop",
        }
    }

    /// The dialects an `import` name stands for: one, or every importable one for `all`
    /// (any case); `None` for a name that is none of them.
    pub fn import_name(name: &str) -> Option<Vec<Dialect>> {
        let name = name.trim().to_ascii_lowercase();
        if name == "all" {
            return Some(Self::IMPORTABLE.to_vec());
        }
        Self::IMPORTABLE
            .iter()
            .find(|dialect| dialect.name() == name)
            .map(|dialect| vec![*dialect])
    }

    /// The valid `import` names, as listed in error messages.
    pub fn import_names() -> String {
        let mut names: Vec<String> = Self::IMPORTABLE
            .iter()
            .map(|dialect| format!("\"{}\"", dialect.name()))
            .collect();
        names.push("\"all\"".to_owned());
        names.join(", ")
    }

    /// Whether the dialect's files are TOML (else JSON).
    pub(crate) fn is_toml(self) -> bool {
        matches!(self, Dialect::Mcpmux | Dialect::Codex)
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
