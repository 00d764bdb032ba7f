//! What the middlewares in front of rmcp's `/mcp` service (`handshake`, `inline`) read alike
//! of a POST's head: the MCP headers' names, and whether it asks nothing beyond a plain
//! answer — anything else is left to rmcp.

use axum::http::{HeaderMap, header};

pub(crate) const SESSION_ID: &str = "mcp-session-id";
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub(crate) const JSON: &str = "application/json";
pub(crate) const EVENT_STREAM: &str = "text/event-stream";

/// Whether a POST's head asks nothing beyond a plain answer: JSON in, both JSON and SSE
/// accepted (rmcp answers 406 otherwise), no MCP header but the session's and the version's
/// (a SEP-2243 one among them).
pub(crate) fn plain(headers: &HeaderMap) -> bool {
    let json_in = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| essence(v).eq_ignore_ascii_case(JSON));
    let (mut json, mut sse) = (false, false);
    for accept in headers.get_all(header::ACCEPT) {
        for media in accept.to_str().unwrap_or_default().split(',') {
            json |= essence(media).eq_ignore_ascii_case(JSON);
            sse |= essence(media).eq_ignore_ascii_case(EVENT_STREAM);
        }
    }
    let other_mcp = headers.keys().any(|name| {
        let name = name.as_str();
        name.starts_with("mcp-") && name != SESSION_ID && name != PROTOCOL_VERSION
    });
    json_in && json && sse && !other_mcp
}

/// A media type without its parameters.
fn essence(media: &str) -> &str {
    media.split(';').next().unwrap_or_default().trim()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn head(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn a_plain_post_accepts_both_answers_sends_json_and_names_no_other_mcp_header() {
        let plain_head = [
            ("content-type", "application/json; charset=utf-8"),
            ("accept", "application/json;q=0.9, text/event-stream"),
            ("mcp-session-id", "s"),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        assert!(plain(&head(&plain_head)));
        assert!(!plain(&head(&plain_head[1..])), "no JSON body");
        assert!(!plain(&head(&[
            plain_head[0],
            ("accept", "application/json")
        ])));
        let mut other = head(&plain_head);
        other.insert("mcp-method", "tools/call".parse().unwrap());
        assert!(!plain(&other), "a SEP-2243 header");
    }
}
