//! What a failed MCP handshake says about the transport under it, read here so that the
//! connection matches on one type instead of knowing any one transport's errors: a streamable
//! HTTP `POST` refused the way an old server refuses it (retry as legacy HTTP+SSE), a legacy
//! `POST` refused for its credentials, a redirect refused to keep headers in their origin.
//!
//! Knows rmcp's handshake error and the transports' own errors; nothing of sessions, retries
//! or the hub.

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::sse::SseError;

/// Why a handshake failed, as far as the transport can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HandshakeRefusal {
    /// A legacy SSE server answered a `POST` with HTTP 401: it wants credentials, and retrying
    /// will not help. The message names the request and the fix.
    Unauthorized {
        /// What to tell the user.
        message: String,
    },
    /// A redirect to another origin (or one too many) was refused. The message names where
    /// it pointed and what to do.
    Redirect {
        /// What to tell the user.
        message: String,
    },
    /// A streamable HTTP `POST` refused outright with `status` (400, 404 or 405): the spec's
    /// sign of an old HTTP+SSE server, to be retried as one on the same URL.
    LegacySse {
        /// The HTTP status of the refusal.
        status: u16,
    },
    /// Nothing the transport knows more about.
    Other,
}

impl HandshakeRefusal {
    /// What `error` says about the transport.
    pub(crate) fn of(error: &ClientInitializeError) -> Self {
        if let Some(refused) = unauthorized_post(error) {
            return Self::Unauthorized {
                message: refused.to_string(),
            };
        }
        if let Some(refused) = crate::auth::redirect::refused_in(error) {
            return Self::Redirect {
                message: refused.to_string(),
            };
        }
        match refused_as_legacy(error) {
            Some(status) => Self::LegacySse { status },
            None => Self::Other,
        }
    }
}

/// The `POST` a legacy SSE server answered with HTTP 401 during the handshake, if that is why
/// the handshake failed: the server wants credentials, and retrying will not help.
fn unauthorized_post(error: &ClientInitializeError) -> Option<&SseError> {
    match error {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => unauthorized_post(fallback),
        ClientInitializeError::TransportError { error, .. } => {
            let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&*error.error);
            while let Some(current) = cause {
                if let Some(refused @ SseError::Unauthorized { .. }) = current.downcast_ref() {
                    return Some(refused);
                }
                cause = current.source();
            }
            None
        }
        _ => None,
    }
}

/// The HTTP status (400, 404 or 405) with which a server refused a streamable HTTP handshake
/// POST outright: the spec's sign of an old HTTP+SSE server, to be retried as one on the same
/// URL. `None` for any other failure.
fn refused_as_legacy(error: &ClientInitializeError) -> Option<u16> {
    match error {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => refused_as_legacy(fallback),
        ClientInitializeError::TransportError { error, .. } => {
            let inner: &(dyn std::error::Error + 'static) = &*error.error;
            match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>()? {
                StreamableHttpError::UnexpectedServerResponse(message) => [400, 404, 405]
                    .into_iter()
                    .find(|status| message.starts_with(&format!("HTTP {status} "))),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::auth::redirect::Refused;

    fn failed(error: impl std::error::Error + Send + Sync + 'static) -> ClientInitializeError {
        ClientInitializeError::TransportError {
            error: rmcp::transport::DynamicTransportError::from_parts(
                "test",
                std::any::TypeId::of::<()>(),
                Box::new(error),
            ),
            context: "send initialize request".into(),
        }
    }

    fn http(status: &'static str) -> StreamableHttpError<reqwest::Error> {
        StreamableHttpError::UnexpectedServerResponse(format!("HTTP {status}: nope").into())
    }

    #[test]
    fn a_post_refused_with_404_405_or_400_is_an_old_sse_server() {
        for (status, code) in [
            ("404 Not Found", 404),
            ("405 Method Not Allowed", 405),
            ("400 Bad Request", 400),
        ] {
            assert_eq!(
                HandshakeRefusal::of(&failed(http(status))),
                HandshakeRefusal::LegacySse { status: code }
            );
        }
        assert_eq!(
            HandshakeRefusal::of(&failed(http("500 Internal Server Error"))),
            HandshakeRefusal::Other
        );
    }

    #[test]
    fn a_legacy_post_answered_401_is_unauthorized_and_names_the_fix() {
        let refused = SseError::Unauthorized {
            endpoint: reqwest::Url::parse("http://127.0.0.1:1/messages").unwrap(),
            sent_authorization: true,
            body: String::new(),
        };
        let discover = failed(http("404 Not Found"));
        let error = ClientInitializeError::LegacyFallbackFailed {
            discover: Box::new(discover),
            fallback: Box::new(failed(refused)),
        };
        let HandshakeRefusal::Unauthorized { message } = HandshakeRefusal::of(&error) else {
            panic!("not read as unauthorized");
        };
        assert!(message.contains("401"), "{message}");
    }

    #[test]
    fn a_refused_redirect_says_where_it_pointed() {
        let refused = Refused::OtherOrigin {
            from: "http://127.0.0.1:1".into(),
            target: "http://127.0.0.1:2".into(),
        };
        let HandshakeRefusal::Redirect { message } = HandshakeRefusal::of(&failed(refused)) else {
            panic!("not read as a refused redirect");
        };
        assert!(message.contains("127.0.0.1:2"), "{message}");
    }
}
