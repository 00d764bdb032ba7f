//! What a URL may show outside the library: its scheme, host, port and path. A query string
//! or a fragment (`?api_key=…`, a session id, a presigned signature) is replaced by `?…`, and
//! userinfo (`user:password@`) is dropped, in every error, log line, status and tool result
//! the library makes — the URL's own and the URLs inside an upstream's or a dependency's error
//! text (reqwest writes the full URL it requested). Header values are never written at all:
//! nothing here needs to find them.

use std::borrow::Cow;

/// What stands where a URL's query or fragment was.
pub const REDACTED_QUERY: &str = "?…";

/// `url` as scheme, host, port and path: the query and fragment replaced by `?…`, userinfo
/// dropped. A string that does not parse as a URL is cut the conservative way: everything up
/// to the last `@` before the query is taken for userinfo.
pub fn redact_url(url: &str) -> String {
    let cut = url.find(['?', '#']);
    let had_query = cut.is_some();
    let mut out = match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => {
            let mut out = format!("{}://", parsed.scheme());
            if let Some(host) = parsed.host_str() {
                out.push_str(host);
            }
            if let Some(port) = parsed.port() {
                out.push(':');
                out.push_str(&port.to_string());
            }
            out.push_str(parsed.path());
            out
        }
        _ => {
            let main = &url[..cut.unwrap_or(url.len())];
            match main.split_once("://") {
                Some((scheme, rest)) => {
                    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
                    format!("{scheme}://{rest}")
                }
                None => main.rsplit_once('@').map_or(main, |(_, host)| host).into(),
            }
        }
    };
    if had_query {
        out.push_str(REDACTED_QUERY);
    }
    out
}

/// `text` with every URL in it (`scheme://…`, up to a space or a quote) shown as
/// [`redact_url`] shows it; borrowed when there is none.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: the letters, digits, `+`, `-` and `.` just before `://`.
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let after = at + 3;
        let end = rest[after..]
            .find(ends_url)
            .map_or(rest.len(), |i| after + i);
        // Closing punctuation after a URL is the sentence's (`(http://h/p)`, `…/p.`): kept,
        // as it shows nothing of the URL.
        let url = rest[start..end].trim_end_matches([')', ']', '}', '.', ',', ';', ':', '!']);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(url));
        out.push_str(&rest[start + url.len()..end]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Where a URL inside free text ends: at white space, a quote or an angle bracket.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '`' | '<' | '>')
}

/// A reqwest error whose URL (which its message and `Debug` both print) keeps only scheme,
/// host, port and path.
pub(crate) fn redact_reqwest(mut error: reqwest::Error) -> reqwest::Error {
    if let Some(url) = error.url_mut() {
        url.set_query(None);
        url.set_fragment(None);
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    error
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_url_keeps_scheme_host_port_and_path_only() {
        assert_eq!(
            redact_url("http://user:pw@127.0.0.1:8080/mcp/x?api_key=S1#frag"),
            "http://127.0.0.1:8080/mcp/x?…"
        );
        assert_eq!(
            redact_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(redact_url("ws://h/ws#only-a-fragment"), "ws://h/ws?…");
        assert_eq!(redact_url("wss://tok@h:9/"), "wss://h:9/");
    }

    #[test]
    fn a_url_that_does_not_parse_loses_everything_before_its_last_at() {
        assert_eq!(
            redact_url("http://user:pa/ss@host:99999/p?k=v"),
            "http://host:99999/p?…"
        );
        assert_eq!(redact_url("not a url?secret"), "not a url?…");
    }

    #[test]
    fn urls_inside_error_text_are_redacted_and_the_words_around_them_kept() {
        let reqwest = "error sending request for url (http://127.0.0.1:1/mcp?api_key=S1#f): \
                       tcp connect error";
        assert_eq!(
            redact_text(reqwest),
            "error sending request for url (http://127.0.0.1:1/mcp?…): tcp connect error"
        );
        let debug = r#"reqwest::Error { url: "https://u:S2@h/p?k=S1", source: x }"#;
        assert_eq!(
            redact_text(debug),
            r#"reqwest::Error { url: "https://h/p?…", source: x }"#
        );
        assert_eq!(
            redact_text("GET ws://a/b?x=1 and ws://c/d."),
            "GET ws://a/b?… and ws://c/d."
        );
        assert!(matches!(redact_text("no url here"), Cow::Borrowed(_)));
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        let once = redact_text("at http://u:p@h:1/p?q=1#f (see https://d/x?y).");
        assert_eq!(redact_text(&once), once);
    }

    #[tokio::test]
    async fn a_reqwest_error_forgets_the_query_and_userinfo_of_its_url() {
        // Port 1 on loopback refuses at once: the error names the URL it requested.
        let error = reqwest::Client::new()
            .get("http://user:S2@127.0.0.1:1/p?api_key=S1")
            .send()
            .await
            .unwrap_err();
        let error = redact_reqwest(error);
        for shown in [error.to_string(), format!("{error:?}")] {
            assert!(!shown.contains("S1") && !shown.contains("S2"), "{shown}");
            assert!(shown.contains("127.0.0.1:1/p"), "{shown}");
        }
    }

    fn secret() -> impl Strategy<Value = String> {
        "SECRET[a-z0-9]{4,8}"
    }

    proptest! {
        #[test]
        fn no_query_userinfo_or_fragment_survives(
            scheme in "(http|https|ws|wss|sse)",
            user in secret(),
            password in secret(),
            host in "[a-z]{1,8}(\\.[a-z]{2,4})?",
            port in proptest::option::of(1u16..),
            path in "(/[a-z0-9_.-]{0,6}){0,3}",
            key in secret(),
            fragment in secret(),
            before in "[ a-z(:\"]{0,6}",
            after in "[ a-z).,:\"]{0,6}",
        ) {
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let url = format!("{scheme}://{user}:{password}@{host}{port}{path}?api_key={key}#{fragment}");
            let text = format!("{before}{url}{after}");
            let shown = redact_text(&text);
            for secret in [&user, &password, &key, &fragment] {
                prop_assert!(!shown.contains(secret.as_str()), "{shown}");
            }
            prop_assert!(shown.contains(&host), "{shown}");
            prop_assert!(shown.contains(REDACTED_QUERY), "{shown}");
            let alone = redact_url(&url);
            for secret in [&user, &password, &key, &fragment] {
                prop_assert!(!alone.contains(secret.as_str()), "{alone}");
            }
        }
    }
}
