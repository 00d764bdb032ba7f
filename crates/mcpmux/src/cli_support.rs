//! The machinery mcpmux's own programs share and a harness does not need: editing the config
//! files (`mcpmux add`, `remove`), the secrets file (`mcpmux secret`), approvals of project
//! servers (`mcpmux trust`), the hub's naming and name filters as the gateway serves them,
//! what may be shown of a URL or of server text on a terminal, locks that outlive a panicked
//! holder, and bounded reads of HTTP bodies and SSE streams (the agent's too).
//!
//! **Not covered by semver.** These items follow the CLI, the gateway (`mcpmux-gateway`) and
//! the Python package, and change with them in any release, a patch release too. A harness
//! that embeds the hub needs none of it: everything it needs is at the crate's root and in
//! `config`, `auth`, `host`, `policy` and `schema`.
//!
//! This file only re-exports; each item is owned and documented where it is defined.

/// Adding and removing a server in the user `config.toml` or a project's `.mcp.json`.
pub mod edit {
    pub use crate::config::edit::{
        Added, EditScope, add, remove, remove_in_scope, scope_file, scope_file_with_env,
    };
    pub use crate::config::edit_args::{EditError, NewServer, NewTransport, valid_name};
}

/// The private secrets file `${secret:NAME}` reads.
pub mod secrets {
    pub use crate::config::discover::secrets_file;
    pub use crate::config::expand::valid_secret_name;
    pub use crate::config::secrets::{
        SECRETS_FILE, SecretValue, SecretsError, read_secrets, remove_secret, secret_names,
        set_secret,
    };
}

/// Stored approvals of a project's own servers (the approvals file).
pub mod trust {
    pub use crate::config::trust::{APPROVALS_FILE, TrustFileError, approve, approve_one, revoke};
}

/// The hub's exposed names and name filters, for a server that serves them under other names.
pub mod naming {
    pub use crate::catalog::filter::{FilterVerdict, NameFilter};
    pub use crate::catalog::naming::{
        MIN_SHORT_NAME_LEN, assign as exposed_names, is_mcp_tool_name, may_own, short_names,
    };
}

/// What an error, a log line or a status may show of a URL.
pub mod redact {
    pub use crate::redact::{REDACTED_QUERY, redact_text, redact_url};
}

/// Server text made safe to print on a person's terminal.
pub mod terminal {
    pub use crate::terminal::{escape_controls, escape_json_controls, is_unsafe_for_terminal};
}

/// Locks taken back from a holder that panicked (what they guard stays usable).
pub mod sync {
    pub use crate::sync::{lock, read, write};
}

/// Bounded reads of a peer's HTTP answer.
pub mod http_body {
    pub use crate::http_body::{BodyError, read_body, read_prefix};
}

/// Server-sent events read under the library's size bounds.
pub mod sse {
    pub use crate::transport::sse::{SseItem, SseParser};
}
