//! The HTTP door's rules, as plain functions: which addresses may be bound without
//! authentication, which `Origin` values are let in (DNS rebinding), the bearer token and its
//! comparison in constant time, reading a token from a file others cannot read, and who a
//! request comes from once admitted (`Client`). Knows nothing of MCP.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use sha2::{Digest, Sha256};

/// Why the gateway will not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// A non-loopback address without a token or OAuth.
    #[error(
        "refusing to serve {addr} without authentication: an address other than loopback \
         needs a bearer token (--token-file FILE or MCPMUX_GATEWAY_TOKEN) or OAuth \
         (--oauth-issuer URL)"
    )]
    NeedsToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The token file cannot be used.
    #[error("token file {path}: {message}")]
    TokenFile {
        /// The file.
        path: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// The token is empty or not one line of visible ASCII.
    #[error("the bearer token {0}")]
    BadToken(&'static str),
}

/// Longest token accepted (a token file is read at most this far).
const MAX_TOKEN_BYTES: usize = 4096;

/// A bearer token, kept only as its digest.
#[derive(Clone)]
pub struct Token {
    digest: [u8; 32],
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A token from its text (one trailing newline and surrounding whitespace dropped).
    pub fn new(text: &str) -> Result<Self, GuardError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(GuardError::BadToken("is empty"));
        }
        if text.len() > MAX_TOKEN_BYTES {
            return Err(GuardError::BadToken("is longer than 4096 bytes"));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(GuardError::BadToken(
                "must be one line of visible ASCII (no spaces or control characters)",
            ));
        }
        Ok(Token {
            digest: Sha256::digest(text.as_bytes()).into(),
        })
    }

    /// Reads a token file, refusing one that group or others may read.
    pub fn from_file(path: &Path) -> Result<Self, GuardError> {
        let fail = |message: String| GuardError::TokenFile {
            path: path.display().to_string(),
            message,
        };
        let metadata = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(fail(format!(
                    "group or others may read it (mode {mode:o}): run `chmod 600 {}`",
                    path.display()
                )));
            }
        }
        if metadata.len() > MAX_TOKEN_BYTES as u64 + 2 {
            return Err(fail("is larger than a token".into()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        Token::new(&text)
    }

    /// Whether an `Authorization` header value carries this token, compared in constant time
    /// (as digests, so the length of the token is not revealed either).
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let Some(presented) = strip_bearer(value) else {
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(presented).into();
        digest
            .iter()
            .zip(self.digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// The credentials of `Bearer <credentials>` (scheme case-insensitive).
pub(crate) fn strip_bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let rest = rest.trim_ascii();
    (!rest.is_empty()).then_some(rest)
}

/// Who a request comes from, as the door admitted it: what rate limits are counted by and
/// access logs name (never a token itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    /// An OAuth token's `sub`.
    Subject(Box<str>),
    /// An OAuth token without `sub`: its `client_id`.
    Holder(Box<str>),
    /// The gateway's static bearer token.
    Token,
    /// A named token of the tokens file.
    Named(Box<str>),
    /// No identity but the peer's address.
    Peer(IpAddr),
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Client::Subject(sub) => write!(f, "sub:{sub}"),
            Client::Holder(id) => write!(f, "client:{id}"),
            Client::Token => f.write_str("token"),
            Client::Named(name) => write!(f, "token:{name}"),
            Client::Peer(ip) => write!(f, "ip:{ip}"),
        }
    }
}

/// Whether `addr` may be served: loopback always, another address only with authentication
/// (a bearer token or OAuth).
pub fn check_bind(addr: SocketAddr, authenticated: bool) -> Result<(), GuardError> {
    if addr.ip().is_loopback() || authenticated {
        Ok(())
    } else {
        Err(GuardError::NeedsToken { addr })
    }
}

/// Whether a request with this `Origin` header may reach `/mcp`. No header (not a browser) is
/// let in; a loopback origin (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`,
/// https too) is let in; anything else only when it is in `allowed` (`scheme://host[:port]`,
/// compared without case and without a trailing `/`; `null` for `Origin: null`).
pub fn origin_allowed(origin: Option<&[u8]>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    if allowed
        .iter()
        .any(|a| a.trim().trim_end_matches('/').eq_ignore_ascii_case(&origin))
    {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(bracketed) = rest.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((host, port)) if port.is_empty() || valid_port(port) => host,
            _ => return false,
        }
    } else {
        match rest.split_once(':') {
            Some((host, port)) if valid_port(port) => host,
            Some(_) => return false,
            None => rest,
        }
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Whether a request with this `Host` header may reach what rmcp's own check does not guard
/// (`/metrics`): any when `allowed` is empty, else its host (and port, when the entry names
/// one) must be in `allowed` (`localhost`, `127.0.0.1`, `::1`, `mcp.example.com:8080`),
/// compared without case. A missing or unreadable header is refused.
pub fn host_allowed(host: Option<&[u8]>, allowed: &[String]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    let Some(authority) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
        return false;
    };
    let Some((host, port)) = split_authority(authority.trim()) else {
        return false;
    };
    allowed.iter().any(|entry| {
        let entry = entry.trim();
        let (want_host, want_port) = split_authority(entry).unwrap_or((entry, None));
        want_host.eq_ignore_ascii_case(host) && want_port.is_none_or(|p| Some(p) == port)
    })
}

/// `host[:port]` or `[v6][:port]` (or a bare `::1`) as its host and port.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, rest) = bracketed.split_once(']')?;
        return match rest.strip_prefix(':') {
            Some(port) => Some((host, Some(port.parse().ok()?))),
            None if rest.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match authority.split_once(':') {
        // More than one colon: an IPv6 address without brackets.
        Some((_, rest)) if rest.contains(':') => Some((authority, None)),
        Some((host, port)) => Some((host, Some(port.parse().ok()?))),
        None => Some((authority, None)),
    }
}

fn valid_port(port: &str) -> bool {
    port.strip_prefix(':')
        .unwrap_or(port)
        .parse::<u16>()
        .is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn loopback_origins_pass_and_others_need_the_list() {
        let none: Vec<String> = Vec::new();
        assert!(origin_allowed(None, &none));
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "https://localhost",
            "http://[::1]:9",
            "HTTP://LOCALHOST:1/",
        ] {
            assert!(origin_allowed(Some(ok.as_bytes()), &none), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io:80",
            "null",
            "http://localhost:notaport",
            "file://",
            "\u{ff}",
        ] {
            assert!(!origin_allowed(Some(bad.as_bytes()), &none), "{bad}");
        }
        let allowed = vec!["https://app.example.com/".to_string(), "null".to_string()];
        assert!(origin_allowed(Some(b"https://App.example.com"), &allowed));
        assert!(origin_allowed(Some(b"null"), &allowed));
        assert!(!origin_allowed(
            Some(b"https://app.example.com:8443"),
            &allowed
        ));
    }

    #[test]
    fn a_host_must_be_allowed_when_there_is_a_list() {
        let loopback = ["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
        for ok in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:9",
            "::1",
        ] {
            assert!(host_allowed(Some(ok.as_bytes()), &loopback), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:80",
            "127.0.0.1.evil:80",
            "[::1",
            "a:b",
        ] {
            assert!(!host_allowed(Some(bad.as_bytes()), &loopback), "{bad}");
        }
        assert!(!host_allowed(None, &loopback));
        assert!(!host_allowed(Some(b"\xff"), &loopback));
        assert!(host_allowed(Some(b"anything"), &[]));
        let pinned = ["mcp.example.com:8080".to_string()];
        assert!(host_allowed(Some(b"mcp.example.com:8080"), &pinned));
        assert!(!host_allowed(Some(b"mcp.example.com:9090"), &pinned));
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let token = Token::new("s3cret-token\n").unwrap();
        assert!(token.admits(Some(b"Bearer s3cret-token")));
        assert!(token.admits(Some(b"bearer s3cret-token")));
        assert!(!token.admits(Some(b"Bearer s3cret-toke")));
        assert!(!token.admits(Some(b"Bearer s3cret-token2")));
        assert!(!token.admits(Some(b"Basic s3cret-token")));
        assert!(!token.admits(Some(b"Bearer ")));
        assert!(!token.admits(Some(b"Bear")));
        assert!(!token.admits(None));
        assert!(Token::new("  ").is_err());
        assert!(Token::new("two words").is_err());
        assert_eq!(format!("{token:?}"), "Token(<redacted>)");
    }

    #[test]
    fn a_non_loopback_bind_needs_authentication() {
        let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(check_bind(local, false).is_ok());
        let refused = check_bind(public, false).unwrap_err();
        assert!(matches!(refused, GuardError::NeedsToken { .. }));
        assert!(refused.to_string().contains("--oauth-issuer"), "{refused}");
        assert!(check_bind(public, true).is_ok());
    }

    #[test]
    fn a_token_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "abc\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = Token::from_file(&path).unwrap_err().to_string();
        assert!(error.contains("chmod 600"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Token::from_file(&path).unwrap().admits(Some(b"Bearer abc")));
    }
}
