//! The middleware in front of `/mcp` and `/metrics`: it applies the door's rules in order —
//! a browser's `Origin` (403), the `Host` of what rmcp does not guard (403), authentication
//! (the static bearer token, a named token of the tokens file, else an OAuth access token:
//! 401, 403 or 503 with the challenge; 403 for a token no access rule matches), the client's
//! rate limits, the gateway's and its rule's (429 with `Retry-After`) — decides the request's `Identity` (in its
//! extensions, and the scope rmcp's session manager reads it from), answers what the session
//! manager refused (404, 409, 503 with `Retry-After`), learns the JSON-RPC method of a small
//! POST for the access log, and counts the POSTs still answering for a graceful shutdown.
//! The rules themselves are `guard`'s, `oauth`'s and `rate_limit`'s. In front of `/healthz`
//! and `/readyz`, the `Host` rule alone (`check_probe`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::{
    body::Body,
    extract::{ConnectInfo, Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use tokio::sync::Notify;

use crate::access::{Access, Claims, Rule};
use crate::access_log::{self, Learnt};
use crate::guard::{self, Client, Token};
use crate::identity::{Identity, Refused, ServedRequest};
use crate::oauth::{Rejection, ResourceServer};
use crate::rate_limit::Limiter;

/// What the door checks, and the requests it let in that are still answering.
pub(crate) struct Door {
    pub token: Option<Token>,
    /// Named tokens and the access rules of identities.
    pub access: Arc<Access>,
    pub oauth: Option<Arc<ResourceServer>>,
    pub limiter: Option<Limiter<Client>>,
    pub allowed_origins: Vec<String>,
    /// The `Host` values `/metrics` answers (rmcp checks `/mcp`'s itself); empty: any.
    pub allowed_hosts: Vec<String>,
    /// Learn the JSON-RPC method of each small POST (for the access log).
    pub peek: bool,
    pub requests: Arc<Requests>,
}

/// POSTs to `/mcp` whose answer is still being sent: what a graceful shutdown waits for
/// (a `tools/call`'s answer travels on its POST's stream after the call itself returned).
#[derive(Default)]
pub(crate) struct Requests {
    open: AtomicUsize,
    idle: Notify,
}

/// One open request; counted until dropped.
struct Open(Arc<Requests>);

impl Requests {
    fn enter(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::SeqCst);
        Open(self.clone())
    }

    /// Returns once no request is open.
    pub(crate) async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.open.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Why the door did not let a request through to authentication's far side.
enum Refusal {
    /// The static token alone is configured, and was not sent.
    Token,
    /// OAuth's answer.
    OAuth(Rejection),
    /// A valid OAuth token no access rule matches.
    NoRule,
}

impl Door {
    /// Who a request with this `Authorization` comes from, once it shows what the door asks
    /// for.
    async fn admit(
        &self,
        authorization: Option<HeaderValue>,
        peer: IpAddr,
    ) -> Result<(Client, Arc<Rule>), Refusal> {
        // One rule shared by every request let in whole, not one made per request.
        static WHOLE: std::sync::LazyLock<Arc<Rule>> = std::sync::LazyLock::new(Arc::default);
        let whole = || WHOLE.clone();
        if self.token.is_none() && self.oauth.is_none() && !self.access.has_tokens() {
            return Ok((Client::Peer(peer), whole()));
        }
        let authorization = authorization.as_ref().map(HeaderValue::as_bytes);
        if let Some(token) = &self.token
            && token.admits(authorization)
        {
            return Ok((Client::Token, whole()));
        }
        let credentials = authorization.and_then(guard::strip_bearer);
        if let Some((name, rule)) = credentials.and_then(|c| self.access.token(c)) {
            return Ok((Client::Named(name), rule));
        }
        let Some(oauth) = &self.oauth else {
            return Err(Refusal::Token);
        };
        let Some(credentials) = credentials else {
            return Err(Refusal::OAuth(Rejection::Missing));
        };
        let principal = oauth.verify(credentials).await.map_err(Refusal::OAuth)?;
        let claims = Claims {
            sub: principal.subject.as_deref(),
            client_id: principal.client_id.as_deref(),
            scopes: &principal.scopes,
            groups: &principal.groups,
        };
        let rule = self.access.oauth_rule(&claims).ok_or(Refusal::NoRule)?;
        let client = match (principal.subject, principal.client_id) {
            (Some(sub), _) => Client::Subject(access_log::clean(&sub).into()),
            (None, Some(id)) => Client::Holder(access_log::clean(&id).into()),
            (None, None) => Client::Peer(peer),
        };
        Ok((client, rule))
    }

    /// The answer to a refused request.
    fn refuse(&self, refusal: Refusal) -> Response {
        let (oauth, rejection) = match (&self.oauth, refusal) {
            (_, Refusal::NoRule) => {
                return (
                    StatusCode::FORBIDDEN,
                    axum::Json(serde_json::json!({
                        "error": "access_denied",
                        "error_description": "no access rule of this gateway matches the token",
                    })),
                )
                    .into_response();
            }
            (Some(oauth), Refusal::OAuth(rejection)) => (oauth, rejection),
            _ => {
                let mut response = (
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send the gateway's token as `Authorization: Bearer TOKEN`",
                )
                    .into_response();
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"mcpmux\""),
                );
                return response;
            }
        };
        let (error, description) = rejection.error();
        let mut response = (
            rejection.status(),
            axum::Json(serde_json::json!({
                "error": error,
                "error_description": description,
            })),
        )
            .into_response();
        let value = match rejection {
            // The keys are read again at most once per refetch interval: come back then.
            Rejection::Unavailable(_) => (
                header::RETRY_AFTER,
                HeaderValue::from(oauth.refetch_interval().as_secs().max(1)),
            ),
            _ => (
                header::WWW_AUTHENTICATE,
                oauth.challenge(&rejection, self.token.is_some()),
            ),
        };
        response.headers_mut().insert(value.0, value.1);
        response
    }
}

/// 429 with `Retry-After` (whole seconds, at least 1) and a JSON-RPC error body.
fn too_many(wait: Duration) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let seconds = seconds.max(1);
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": -32000,
                "message": format!("rate limit exceeded: retry after {seconds} s"),
            },
        })),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// The answer to a request the session manager refused (rmcp would answer 500).
fn refusal(refused: Refused) -> Response {
    match refused {
        Refused::NotFound => {
            (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
        }
        Refused::StreamHeld => (
            StatusCode::CONFLICT,
            "Conflict: this session's GET stream is already open; close it, or resume it with \
             Last-Event-ID",
        )
            .into_response(),
        Refused::Full { retry_after } => {
            let seconds = retry_after.as_secs().max(1);
            let mut response = (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {
                        "code": -32000,
                        "message": format!(
                            "the gateway holds as many sessions as it keeps (for this client, or \
                             in all): close one, or retry after {seconds} s"
                        ),
                    },
                })),
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            response
        }
    }
}

/// Leaves what was learnt in the answer for the access log.
fn learnt(mut response: Response, learnt: Learnt) -> Response {
    response.extensions_mut().insert(learnt);
    response
}

/// Reads a small POST's body to learn its JSON-RPC method, and puts it back.
async fn peek(request: Request, learnt: &mut Learnt) -> Result<Request, Response> {
    let small = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|n| n.to_str().ok()?.parse::<u64>().ok())
        .is_some_and(|n| n <= access_log::MAX_PEEK_BYTES);
    if !small {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    // Content-Length bounds what hyper reads; the limit is a second fence.
    let bytes = axum::body::to_bytes(body, access_log::MAX_PEEK_BYTES as usize)
        .await
        .map_err(|_| {
            (
                StatusCode::BAD_REQUEST,
                "Bad Request: the body could not be read",
            )
                .into_response()
        })?;
    access_log::peek(&bytes, learnt);
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// In front of `/mcp` and `/metrics`: the door's rules in order, then the route.
pub(crate) async fn check_door(
    State(door): State<Arc<Door>>,
    request: Request,
    next: Next,
) -> Response {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .map(HeaderValue::as_bytes);
    if !guard::origin_allowed(origin, &door.allowed_origins) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Origin may not use the gateway (mcpmux serve --allow-origin ORIGIN lets one in)",
        )
            .into_response();
    }
    let host = request
        .headers()
        .get(header::HOST)
        .map(HeaderValue::as_bytes);
    let to_mcp = request.uri().path() == "/mcp";
    if !to_mcp && !guard::host_allowed(host, &door.allowed_hosts) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Host is not served (mcpmux serve --allow-host HOST adds one)",
        )
            .into_response();
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
    let authorization = request.headers().get(header::AUTHORIZATION).cloned();
    let (client, rule) = match door.admit(authorization, peer).await {
        Ok(admitted) => admitted,
        Err(refusal) => {
            let tried = Learnt {
                client: Some(Client::Peer(peer).to_string()),
                ..Learnt::default()
            };
            // Failed attempts are counted against the peer's address: guessing is slowed too.
            if let Some(limiter) = &door.limiter
                && let Err(wait) = limiter.check(&Client::Peer(peer))
            {
                return learnt(too_many(wait), tried);
            }
            return learnt(door.refuse(refusal), tried);
        }
    };
    // Only the access log reads what the door learnt: without it, no string and no
    // extension per request.
    let mut seen = door.peek.then(|| Learnt {
        client: Some(client.to_string()),
        ..Learnt::default()
    });
    if to_mcp
        && let Some(limiter) = &door.limiter
        && let Err(wait) = limiter.check(&client)
    {
        return learnt_if(too_many(wait), seen);
    }
    // The identity's own rate, when its rule sets one.
    if to_mcp
        && let Some(limiter) = &rule.limiter
        && let Err(wait) = limiter.check(&client)
    {
        return learnt_if(too_many(wait), seen);
    }
    let posting = request.method() == Method::POST;
    let request = match seen.as_mut() {
        Some(seen) if posting => match peek(request, seen).await {
            Ok(request) => request,
            Err(refused) => return learnt(refused, seen.clone()),
        },
        _ => request,
    };
    let deleting = request.method() == Method::DELETE;
    let listening = request.method() == Method::GET;
    let authenticated = door.token.is_some() || door.oauth.is_some() || door.access.has_tokens();
    let identity = Identity {
        client,
        rule,
        authenticated,
    };
    let mut request = request;
    request.extensions_mut().insert(identity.clone());
    // What rmcp does for the request without it in hand (making its session, its handler)
    // knows whose it is.
    let serve = |request| async move {
        let served = async move {
            if listening {
                ServedRequest::listening();
            }
            next.run(request).await
        };
        let (response, refused) = ServedRequest::scope(identity, served).await;
        match refused {
            Some(refused) => refusal(refused),
            None => response,
        }
    };
    if posting {
        let open = door.requests.enter();
        let (parts, body) = serve(request).await.into_parts();
        // Counted until its answer has been sent (or the client went away).
        let body = Body::new(Counted { body, _open: open });
        return learnt_if(Response::from_parts(parts, body), seen);
    }
    let mut response = serve(request).await;
    if deleting && response.status() == StatusCode::ACCEPTED {
        // rmcp ends a session with 202; the Python SDK reports anything but 200/204 as a
        // failed termination. The session is gone either way: say so plainly.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    learnt_if(response, seen)
}

/// A POST's answer, counted open until it has been sent or dropped. Its size is the body's:
/// hyper writes an answer of known length with its head, not chunked.
struct Counted {
    body: Body,
    _open: Open,
}

impl http_body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

fn learnt_if(response: Response, seen: Option<Learnt>) -> Response {
    match seen {
        Some(seen) => learnt(response, seen),
        None => response,
    }
}

/// In front of `/healthz` and `/readyz`: a `Host` outside the allowlist is refused (403), as
/// for `/metrics`, so a page a DNS-rebinding attack loads cannot read them. A request with no
/// `Host` at all is no browser's (an HTTP/1.0 health check sends none): let in.
pub(crate) async fn check_probe(
    State(door): State<Arc<Door>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request.headers().get(header::HOST);
    if host.is_some_and(|host| !guard::host_allowed(Some(host.as_bytes()), &door.allowed_hosts)) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Host is not served (mcpmux serve --allow-host HOST adds one)",
        )
            .into_response();
    }
    next.run(request).await
}
