//! Which HTTP redirects mcpmux follows: within the origin of the request only (same scheme,
//! host and port, so never from https to http), at most a few. A server's custom headers
//! (`X-API-Key`, a static `Authorization`) and tokens are meant for that server alone; reqwest
//! drops only the standard credential headers on a cross-host redirect, so a redirect to
//! another origin is refused outright rather than followed without them.
//!
//! Every reqwest client that carries a server's headers or tokens is built with
//! [`same_origin`]. This knows nothing of servers: the refusal names the target origin, and the
//! caller's error names the server.

/// Redirects followed for one request before it fails (reqwest's own default is 10).
const MAX_REDIRECTS: usize = 5;

/// A redirect that was refused, with where it pointed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// To another origin (scheme, host or port differ).
    #[error(
        "the server redirected to another origin, {target} (from {from}); mcpmux follows \
         redirects only within the server's own origin, so its headers and tokens never \
         leave it: put the final URL in the config if that origin is trusted"
    )]
    OtherOrigin {
        /// The origin of the first request.
        from: String,
        /// The origin redirected to.
        target: String,
    },
    /// Too many redirects in a row.
    #[error("the server redirected more than {MAX_REDIRECTS} times in a row (last to {target})")]
    TooMany {
        /// Where the last one pointed.
        target: String,
    },
}

/// The redirect policy for every client that carries a server's headers or tokens.
pub(crate) fn same_origin() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.follow();
        };
        let (from, target) = (first.origin(), attempt.url().origin());
        if from != target {
            let refused = Refused::OtherOrigin {
                from: from.ascii_serialization(),
                target: target.ascii_serialization(),
            };
            return attempt.error(refused);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            let target = attempt.url().to_string();
            return attempt.error(Refused::TooMany { target });
        }
        attempt.follow()
    })
}

/// The refused redirect behind `error`, if that is why it failed. rmcp's handshake and
/// streamable HTTP errors do not chain to the errors they wrap, so those links are followed
/// by hand.
pub(crate) fn refused_in<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(refused) = error.downcast_ref::<Refused>() {
            return Some(refused);
        }
        if let Some(StreamableHttpError::Client(inner)) =
            error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            current = Some(inner);
            continue;
        }
        current = match error.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => Some(&*error.error),
            Some(ClientInitializeError::LegacyFallbackFailed { fallback, .. }) => Some(&**fallback),
            _ => error.source(),
        };
    }
    None
}
