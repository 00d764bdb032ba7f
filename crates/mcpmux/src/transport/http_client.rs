//! The HTTP client of a streamable-HTTP server that may need OAuth: every request carries the
//! current token, and a 401 or a 403 `insufficient_scope` is answered where it happens (refresh,
//! authorize, step up) and the request sent again, so a session never sees a refusal it could
//! not act on. Without OAuth state it is the shared pooled client, untouched, except that a
//! `headersHelper`'s headers refused with a 401 are replaced by what the helper prints when run
//! again, and the request sent again with them. A request whose keep-alive connection died
//! under it is sent once more on a fresh one (never a `tools/call`).
//!
//! The rmcp `StreamableHttpClient` implementation, so a transport part: it calls `auth/` for
//! the token, the DPoP proof and what to do about a refusal; `auth/` knows nothing of it.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use futures::future::Either;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use super::headers_helper::Helper;
use super::http_screen;
use super::http_session::{self, SessionWatch};
use crate::auth::dpop::{self, Dpop};
use crate::auth::session::{Retry, ServerAuth, detached};
use crate::redact::redact_reqwest;

type HttpError = StreamableHttpError<reqwest::Error>;

/// The pooled client, with the server's OAuth state when it has one.
#[derive(Clone)]
pub(crate) struct AuthorizingClient {
    http: reqwest::Client,
    auth: Option<Arc<ServerAuth>>,
    helper: Option<Arc<Helper>>,
    /// Without OAuth: told of a 401 that stands, so the session ends (see
    /// [`ServerAuth::refused_outside_oauth`]).
    refusals: Option<Arc<ServerAuth>>,
    /// What the server's answers say about the session (see [`http_session`]).
    session: Arc<SessionWatch>,
    /// The server's name, for the log of what its answers cost (`http_screen.rs`).
    server: Arc<str>,
    /// The session rmcp's worker last POSTed in, for requests sent beside it
    /// (`http_direct.rs`).
    posting: Arc<ArcSwapOption<Posting>>,
}

/// What rmcp's worker POSTs a session's messages with: the session's id and the headers it
/// negotiated (`MCP-Protocol-Version` among the configured ones), as it last sent them.
#[derive(Debug, PartialEq)]
pub(crate) struct Posting {
    /// The session's `Mcp-Session-Id`.
    pub(crate) session_id: Arc<str>,
    /// The token rmcp passes, if any (we give it none; kept as it passes).
    pub(crate) auth_header: Option<String>,
    /// The configured headers with the protocol version rmcp adds.
    pub(crate) headers: HashMap<HeaderName, HeaderValue>,
}

impl AuthorizingClient {
    /// `http` as is when `auth` is `None`.
    pub fn new(http: reqwest::Client, auth: Option<Arc<ServerAuth>>) -> Self {
        Self {
            http,
            auth,
            helper: None,
            refusals: None,
            session: Arc::default(),
            server: Arc::from(""),
            posting: Arc::default(),
        }
    }

    /// The session rmcp's worker last POSTed in, once it has one.
    pub(crate) fn posting(&self) -> Option<Arc<Posting>> {
        self.posting.load_full()
    }

    /// Forgets the session `gone` (its server no longer knows it), unless rmcp has moved on.
    pub(crate) fn forget_posting(&self, gone: &Posting) {
        let current = self.posting.load();
        if let Some(current) = current.as_ref()
            && current.session_id == gone.session_id
        {
            self.posting.compare_and_swap(current, None);
        }
    }

    /// Keeps what rmcp POSTs a message of its session with, when it changed: the session
    /// (a new one after a lost one) or its headers (the protocol version, after the
    /// handshake).
    fn remember_posting(
        &self,
        message: &ClientJsonRpcMessage,
        session_id: Option<&Arc<str>>,
        auth_header: Option<&String>,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) {
        let Some(session_id) = session_id else {
            return;
        };
        if http_session::is_initialize(message) {
            return;
        }
        let current = self.posting.load();
        if let Some(current) = current.as_ref()
            && current.session_id == *session_id
            && current.auth_header.as_ref() == auth_header
            && current.headers == *headers
        {
            return;
        }
        self.posting.store(Some(Arc::new(Posting {
            session_id: session_id.clone(),
            auth_header: auth_header.cloned(),
            headers: headers.clone(),
        })));
    }

    /// This client, logging as the server `name`.
    pub fn named(mut self, name: &str) -> Self {
        self.server = Arc::from(name);
        self
    }

    /// What the server's answers say about the session, for the connection to act on.
    pub fn session_watch(&self) -> Arc<SessionWatch> {
        self.session.clone()
    }

    /// Where a 401 to credentials OAuth does not manage is reported when it stands.
    pub fn reporting_refusals_to(mut self, state: Option<Arc<ServerAuth>>) -> Self {
        self.refusals = state;
        self
    }

    /// The server's `headersHelper`, run again when the server refuses what it printed
    /// (without OAuth state only: with it, OAuth answers refusals).
    pub fn with_helper(mut self, helper: Option<Arc<Helper>>) -> Self {
        self.helper = helper;
        self
    }

    /// Runs `send` (a `method` request to `uri`) with the current token; on a refusal the
    /// OAuth state may act once, and the request is sent again with the token it obtained.
    async fn send<T, F, Fut>(
        &self,
        method: &str,
        uri: &str,
        given: Option<String>,
        send: F,
    ) -> Result<T, HttpError>
    where
        F: Fn(Presented) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let Some(auth) = &self.auth else {
            let outcome = match &self.helper {
                None => send(Presented::bearer(given)).await,
                Some(helper) => with_helper(helper, given, send).await,
            };
            if let (Err(refusal), Some(state)) = (&outcome, &self.refusals)
                && refused_credentials(refusal)
            {
                state.refused_outside_oauth();
            }
            return outcome;
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
        let mut nonce_learned = false;
        for _ in 0..5 {
            let outcome = send(present(auth, method, uri, token.as_deref())?).await;
            // Cloned only on a refusal: the flows run detached and need owned values.
            let owned = || (auth.clone(), token.clone());
            let retry = match &outcome {
                Err(StreamableHttpError::AuthRequired(required))
                    if !nonce_learned && dpop::wants_nonce(&required.www_authenticate_header) =>
                {
                    nonce_learned = true;
                    match (auth.dpop(), token.as_deref()) {
                        (Some(dpop), Some(sent))
                            if self.learn_nonce(&dpop, method, uri, sent).await =>
                        {
                            continue;
                        }
                        _ => return outcome,
                    }
                }
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
        send(present(auth, method, uri, token.as_deref())?).await
    }

    /// Learns the nonce a resource server wants in DPoP proofs. Its `use_dpop_nonce` refusal
    /// carries it in a `DPoP-Nonce` header, which rmcp does not pass on; the same request
    /// with an empty body is refused the same way (a server checks the proof before it reads
    /// the body), and its headers are read here. True when a nonce was learned.
    async fn learn_nonce(&self, dpop: &Dpop, method: &str, uri: &str, token: &str) -> bool {
        let Ok(proof) = dpop.resource_proof(method, uri, token) else {
            return false;
        };
        let Ok(method) = reqwest::Method::from_bytes(method.as_bytes()) else {
            return false;
        };
        let response = self
            .http
            .request(method, uri)
            .header(reqwest::header::AUTHORIZATION, format!("DPoP {token}"))
            .header("dpop", proof)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .body("{}")
            .send()
            .await;
        let nonce = response.ok().and_then(|r| {
            r.headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
        match nonce {
            Some(nonce) => {
                tracing::debug!("the MCP server wants a DPoP nonce; sending again with it");
                dpop.set_resource_nonce(nonce);
                true
            }
            None => false,
        }
    }
}

/// Sends `message` with `post`, and once more on a fresh connection when the first try died
/// with the connection before any answer: the server closed an idle keep-alive connection as
/// we reused it. A tool call is not sent twice (the server may have started it before the
/// connection broke); the hub retries read-only calls itself.
pub(crate) async fn resend_on_stale_connection<T, F, Fut>(
    message: &ClientJsonRpcMessage,
    post: F,
) -> Result<T, StreamableHttpError<reqwest::Error>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
{
    let first = post().await;
    match &first {
        Err(StreamableHttpError::Client(e)) if stale_connection(e) && resendable(message) => {
            tracing::debug!("the connection broke before the server answered ({e}); sending again");
            post().await
        }
        _ => first,
    }
}

/// Whether `message` may reach the server twice without harm.
fn resendable(message: &ClientJsonRpcMessage) -> bool {
    !is_tool_call(message)
}

/// Whether `message` is a `tools/call` request.
pub(crate) fn is_tool_call(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::CallToolRequest(_)))
}

/// A request that failed because the connection under it was gone: reset, aborted, or closed
/// before the response began. Connect failures are not stale connections.
pub(crate) fn stale_connection(error: &reqwest::Error) -> bool {
    if error.is_connect() || error.is_timeout() {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        if let Some(hyper) = current.downcast_ref::<hyper::Error>()
            && hyper.is_incomplete_message()
        {
            return true;
        }
        source = current.source();
    }
    false
}

/// How a request carries its token: a Bearer token for rmcp to send, or the `DPoP`
/// authorization and proof headers.
pub(crate) struct Presented {
    bearer: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
}

impl Presented {
    fn bearer(token: Option<String>) -> Self {
        Self {
            bearer: token,
            headers: HashMap::new(),
        }
    }

    /// The request's custom headers with the DPoP ones added.
    fn headers(
        &self,
        custom: &HashMap<HeaderName, HeaderValue>,
    ) -> HashMap<HeaderName, HeaderValue> {
        let mut all = custom.clone();
        all.extend(self.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }
}

/// `token` as the server's OAuth state says to present it on a `method` request to `uri`.
fn present(
    auth: &ServerAuth,
    method: &str,
    uri: &str,
    token: Option<&str>,
) -> Result<Presented, HttpError> {
    let (Some(token), Some(dpop)) = (token, auth.dpop()) else {
        return Ok(Presented::bearer(token.map(str::to_owned)));
    };
    let proof = dpop
        .resource_proof(method, uri, token)
        .map_err(auth_error)?;
    let header = |value: String| {
        HeaderValue::from_str(&value).map_err(|_| {
            auth_error(AuthError::InternalError(
                "a token that cannot be sent in an HTTP header".into(),
            ))
        })
    };
    let mut headers = HashMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        header(format!("DPoP {token}"))?,
    );
    headers.insert(HeaderName::from_static("dpop"), header(proof)?);
    Ok(Presented {
        bearer: None,
        headers,
    })
}

/// Runs `send` with the helper's latest headers; when the server refuses them, once more with
/// what the helper prints when run again (if anything new).
async fn with_helper<T, F, Fut>(
    helper: &Helper,
    given: Option<String>,
    send: F,
) -> Result<T, HttpError>
where
    F: Fn(Presented) -> Fut,
    Fut: Future<Output = Result<T, HttpError>>,
{
    let sent = helper.latest().await;
    let mut outcome = send(Presented {
        bearer: given.clone(),
        headers: sent.clone(),
    })
    .await;
    if matches!(&outcome, Err(refusal) if refused_credentials(refusal))
        && let Some(fresh) = helper.renew(&sent).await
    {
        outcome = send(Presented {
            bearer: given,
            headers: fresh,
        })
        .await;
    }
    if outcome.is_ok() {
        helper.worked();
    }
    outcome
}

/// Whether the server answered HTTP 401: with a challenge rmcp reads it as `AuthRequired`,
/// without one it is an unexpected response that starts with the status.
fn refused_credentials(error: &HttpError) -> bool {
    match error {
        StreamableHttpError::AuthRequired(_) => true,
        StreamableHttpError::UnexpectedServerResponse(message) => message.starts_with("HTTP 401"),
        _ => false,
    }
}

/// The error rmcp is given, whose text it logs and passes on: reqwest's URL in it keeps only
/// scheme, host, port and path.
fn redacted(error: HttpError) -> HttpError {
    match error {
        StreamableHttpError::Client(error) => StreamableHttpError::Client(redact_reqwest(error)),
        other => other,
    }
}

/// An OAuth failure as rmcp's transport error (`AuthorizationRequired` inside it still reads as
/// authorization required, so the connection ends `NeedsAuth`).
fn auth_error(error: AuthError) -> HttpError {
    StreamableHttpError::Auth(error)
}

/// What rmcp hands every POST and GET of the session: where, in which session, with which
/// credentials and headers.
pub(crate) struct Request {
    uri: Arc<str>,
    session_id: Option<Arc<str>>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
}

impl Request {
    pub(crate) fn new(
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Self {
        Self {
            uri,
            session_id,
            auth_header,
            custom_headers,
        }
    }
}

impl AuthorizingClient {
    /// POSTs `message` the one way every POST goes: credentials and a refusal answered
    /// ([`Self::send`]), a stale connection tried again, an unreachable server waited for, its
    /// answer screened; `max` the raw SSE event cap rmcp passes, when it passes one.
    pub(crate) async fn post(
        &self,
        post: Request,
        message: &ClientJsonRpcMessage,
        max: Option<usize>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let Request {
            uri,
            session_id,
            auth_header,
            custom_headers,
        } = post;
        self.remember_posting(
            message,
            session_id.as_ref(),
            auth_header.as_ref(),
            &custom_headers,
        );
        let custom_headers = super::trace_headers::with_trace_headers(message, custom_headers);
        let in_session = session_id.is_some();
        let outcome = http_session::while_unreachable(&self.session, in_session, || {
            resend_on_stale_connection(message, || {
                self.send("POST", &uri, auth_header.clone(), |presented| {
                    let (uri, message, session) =
                        (uri.clone(), message.clone(), session_id.clone());
                    let (bearer, headers) =
                        (presented.bearer.clone(), presented.headers(&custom_headers));
                    match max {
                        Some(max) => Either::Left(self.http.post_message_with_max_sse_event_size(
                            uri, message, session, bearer, headers, max,
                        )),
                        None => Either::Right(
                            self.http
                                .post_message(uri, message, session, bearer, headers),
                        ),
                    }
                })
            })
        })
        .await;
        let outcome =
            http_session::post_outcome(&self.session, message, session_id.as_deref(), outcome)
                .map_err(redacted);
        http_screen::post(&self.server, message, max, outcome)
    }

    /// Opens the GET stream the one way every GET goes: credentials and a refusal answered
    /// ([`Self::send`]), its events screened; `max` as for [`Self::post`].
    pub(crate) async fn get(
        &self,
        get: Request,
        last_event_id: Option<String>,
        max: Option<usize>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let Request {
            uri,
            session_id,
            auth_header,
            custom_headers,
        } = get;
        let outcome = self
            .send("GET", &uri, auth_header, |presented| {
                let (uri, session, last) = (uri.clone(), session_id.clone(), last_event_id.clone());
                let (bearer, headers) =
                    (presented.bearer.clone(), presented.headers(&custom_headers));
                match max {
                    Some(max) => Either::Left(self.http.get_stream_with_max_sse_event_size(
                        uri, session, last, bearer, headers, max,
                    )),
                    None => {
                        Either::Right(self.http.get_stream(uri, session, last, bearer, headers))
                    }
                }
            })
            .await;
        http_session::get_outcome(&self.session, session_id.as_deref(), outcome)
            .map_err(redacted)
            .map(|stream| http_screen::get_stream(&self.server, stream))
    }
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
        let post = Request::new(uri, session_id, auth_header, custom_headers);
        self.post(post, &message, None).await
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
        let post = Request::new(uri, session_id, auth_header, custom_headers);
        self.post(post, &message, Some(max_sse_event_size)).await
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
        let presented = match (&self.auth, &self.helper) {
            (Some(auth), _) => present(auth, "DELETE", &uri, token.as_deref())?,
            (None, Some(helper)) => Presented {
                bearer: token,
                headers: helper.latest().await,
            },
            (None, None) => Presented::bearer(token),
        };
        let headers = presented.headers(&custom_headers);
        self.http
            .delete_session(uri, session_id, presented.bearer, headers)
            .await
            .map_err(redacted)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let get = Request::new(uri, session_id, auth_header, custom_headers);
        self.get(get, last_event_id, None).await
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
        let get = Request::new(uri, session_id, auth_header, custom_headers);
        self.get(get, last_event_id, Some(max_sse_event_size)).await
    }
}
