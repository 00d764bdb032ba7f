//! The HTTP client of a streamable-HTTP server that may need OAuth: every request carries the
//! current token, and a 401 or a 403 `insufficient_scope` is answered where it happens (refresh,
//! authorize, step up) and the request sent again, so a session never sees a refusal it could
//! not act on. Without OAuth state it is the shared pooled client, untouched.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use super::session::{Retry, ServerAuth, detached};
use crate::transport::http::resend_on_stale_connection;

type HttpError = StreamableHttpError<reqwest::Error>;

/// The pooled client, with the server's OAuth state when it has one.
#[derive(Clone)]
pub(crate) struct AuthorizingClient {
    http: reqwest::Client,
    auth: Option<Arc<ServerAuth>>,
}

impl AuthorizingClient {
    /// `http` as is when `auth` is `None`.
    pub fn new(http: reqwest::Client, auth: Option<Arc<ServerAuth>>) -> Self {
        Self { http, auth }
    }

    /// Runs `send` with the current token; on a refusal the OAuth state may act once, and
    /// the request is sent again with the token it obtained.
    async fn send<T, F, Fut>(&self, given: Option<String>, send: F) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let Some(auth) = &self.auth else {
            return send(given).await;
        };
        let mut token = match given {
            Some(token) => Some(token),
            None => auth.token().await.map_err(|e| {
                auth.record_failure(&e);
                auth_error(e)
            })?,
        };
        // One 401 recovery and the bounded step-ups; each round needs a new token to go on.
        let mut stepped_up = false;
        for _ in 0..4 {
            let outcome = send(token.clone()).await;
            // Cloned only on a refusal: the flows run detached and need owned values.
            let owned = || (auth.clone(), token.clone());
            let retry = match &outcome {
                Err(StreamableHttpError::AuthRequired(required)) => {
                    let (auth, sent) = owned();
                    let challenge = required.www_authenticate_header.clone();
                    detached(
                        move || async move { auth.unauthorized(sent.as_deref(), &challenge).await },
                    )
                    .await
                }
                Err(StreamableHttpError::InsufficientScope(insufficient)) => {
                    stepped_up = true;
                    let (auth, sent) = owned();
                    let required = insufficient.required_scope.clone();
                    let challenge = insufficient.www_authenticate_header.clone();
                    detached(move || async move {
                        auth.insufficient_scope(sent.as_deref(), required.as_deref(), &challenge)
                            .await
                    })
                    .await
                }
                Ok(_) => {
                    if stepped_up {
                        auth.step_up_worked();
                    }
                    return outcome;
                }
                Err(_) => return outcome,
            };
            match retry {
                Ok(Retry::With(fresh)) if Some(&fresh) != token.as_ref() => token = Some(fresh),
                Ok(_) => return outcome,
                Err(e) => {
                    tracing::warn!("OAuth could not recover from the server's refusal: {e}");
                    auth.record_failure(&e);
                    return Err(auth_error(e));
                }
            }
        }
        send(token).await
    }
}

/// An OAuth failure as rmcp's transport error (`AuthorizationRequired` inside it still reads as
/// authorization required, so the connection ends `NeedsAuth`).
fn auth_error(error: AuthError) -> HttpError {
    StreamableHttpError::Auth(error)
}

impl StreamableHttpClient for AuthorizingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        resend_on_stale_connection(&message, || {
            self.send(auth_header.clone(), |token| {
                self.http.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                )
            })
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        resend_on_stale_connection(&message, || {
            self.send(auth_header.clone(), |token| {
                self.http.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        // Closing needs no new authorization: a refused DELETE is not worth a browser window.
        let token = match (auth_header, &self.auth) {
            (Some(token), _) => Some(token),
            (None, Some(auth)) => auth.token().await.ok().flatten(),
            (None, None) => None,
        };
        self.http
            .delete_session(uri, session_id, token, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.send(auth_header, |token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.send(auth_header, |token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
