//! The authorization step: where a person (or a test) approves access and the authorization
//! server redirects back with a code. Pluggable, so a terminal opens a browser and listens on a
//! loopback port, while a headless harness or a test supplies the redirect its own way.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::sync::lock;

/// A boxed future, as [`Authorizer`] returns.
pub type AuthorizeFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// What the person is asked to approve.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthorizationPrompt {
    /// The server (as configured) that asked for authorization.
    pub server: String,
    /// The authorization URL to open.
    pub url: String,
    /// The redirect URI the authorization server will send the browser back to.
    pub redirect_uri: String,
    /// The scopes asked for, space-separated (empty: none named).
    pub scopes: String,
}

/// Runs the person-facing part of the OAuth authorization-code flow.
pub trait Authorizer: Send + Sync + 'static {
    /// Prepares to receive the redirect (binding a listener, say) and returns the redirect URI
    /// to register; `port` is the configured `callbackPort`, if any.
    fn redirect_uri(&self, port: Option<u16>) -> AuthorizeFuture<'_, String>;

    /// Has the authorization at `prompt.url` done and returns the full URL the authorization
    /// server redirected to (with `code` and `state`, or `error`).
    fn authorize(&self, prompt: AuthorizationPrompt) -> AuthorizeFuture<'_, String>;
}

/// The terminal's authorizer: a loopback listener on 127.0.0.1 receives the redirect, and the
/// browser is opened on the authorization URL (or the URL is printed when none can open).
pub struct LoopbackAuthorizer {
    listener: Mutex<Option<TcpListener>>,
    timeout: Duration,
    open_browser: bool,
}

impl LoopbackAuthorizer {
    /// An authorizer that opens the browser and waits up to 5 minutes for the redirect.
    pub fn new() -> Self {
        Self {
            listener: Mutex::new(None),
            timeout: Duration::from_secs(300),
            open_browser: true,
        }
    }

    /// Builder-style: how long to wait for the person to finish.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Builder-style: only print the URL, never launch a browser.
    pub fn without_browser(mut self) -> Self {
        self.open_browser = false;
        self
    }

    fn take_listener(&self) -> Option<TcpListener> {
        lock(&self.listener).take()
    }
}

impl Default for LoopbackAuthorizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn redirect_uri(&self, port: Option<u16>) -> AuthorizeFuture<'_, String> {
        Box::pin(async move {
            let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
                .await
                .map_err(|e| match port {
                    Some(port) => format!(
                        "cannot listen on 127.0.0.1:{port} for the OAuth redirect ({e}): free the port or change `oauth.callbackPort`"
                    ),
                    None => format!("cannot listen on 127.0.0.1 for the OAuth redirect: {e}"),
                })?;
            let bound = listener
                .local_addr()
                .map_err(|e| format!("cannot read the redirect listener's address: {e}"))?;
            let uri = format!("http://127.0.0.1:{}/callback", bound.port());
            *lock(&self.listener) = Some(listener);
            Ok(uri)
        })
    }

    fn authorize(&self, prompt: AuthorizationPrompt) -> AuthorizeFuture<'_, String> {
        Box::pin(async move {
            let listener = match self.take_listener() {
                Some(listener) => listener,
                // A step-up reuses the registered redirect URI: listen on its port again.
                None => {
                    let port = reqwest::Url::parse(&prompt.redirect_uri)
                        .ok()
                        .and_then(|url| url.port());
                    self.redirect_uri(port).await?;
                    self.take_listener()
                        .ok_or("the redirect listener vanished")?
                }
            };
            eprintln!(
                "To authorize mcpmux for `{}`, open this URL in a browser:\n\n  {}\n",
                prompt.server, prompt.url
            );
            // The opener waits a moment for each launcher to fail: off the runtime's threads.
            let opened = if self.open_browser {
                let url = prompt.url.clone();
                tokio::task::spawn_blocking(move || open_browser(&url))
                    .await
                    .unwrap_or(false)
            } else {
                true
            };
            if !opened {
                eprintln!(
                    "(no browser could be opened here; open the URL on any machine whose browser can reach {})",
                    prompt.redirect_uri
                );
            }
            tokio::time::timeout(self.timeout, receive_redirect(&listener))
                .await
                .map_err(|_| {
                    format!(
                        "nobody completed the authorization within {} s; run the command again",
                        self.timeout.as_secs()
                    )
                })?
        })
    }
}

/// Launches the desktop's browser (the `open` crate: `open` on macOS, the shell on Windows,
/// `xdg-open`, `gio`, `wslview` and the rest on Linux); false when there is none to launch.
/// On Linux without a display nothing is tried: the person opens the printed URL.
fn open_browser(url: &str) -> bool {
    if std::env::var_os("DISPLAY").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none()
        && cfg!(target_os = "linux")
    {
        return false;
    }
    // Detached: the opener is reaped by the crate, and the flow waits for the redirect.
    open::that_detached(url).is_ok()
}

/// Accepts connections until one is the redirect (a GET with `code`, `state` or `error`),
/// answering each; returns the redirect as a full URL.
async fn receive_redirect(listener: &TcpListener) -> Result<String, String> {
    let port = listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|e| e.to_string())?;
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the redirect listener failed: {e}"))?;
        let mut buffer = vec![0u8; 8192];
        let mut read = 0;
        // The request line is all we need; browsers send it in the first packet.
        while read < buffer.len() {
            match socket.read(&mut buffer[read..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
            if buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let head = String::from_utf8_lossy(&buffer[..read]);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        let is_redirect = target.starts_with("/callback?")
            && ["code=", "error="].iter().any(|key| target.contains(key));
        let (status, body) = if is_redirect {
            (
                "200 OK",
                "<html><body><h3>mcpmux is authorized.</h3>You can close this window.</body></html>",
            )
        } else {
            ("404 Not Found", "not the OAuth redirect")
        };
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
        let _ = socket.shutdown().await;
        if is_redirect {
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
    }
}

/// An authorizer for authorization servers that approve without a person (test servers, the
/// conformance suite, pre-consented enterprise clients): it requests the authorization URL
/// itself and takes the redirect from the `Location` header.
pub struct HeadlessAuthorizer {
    http: reqwest::Client,
}

impl HeadlessAuthorizer {
    /// A headless authorizer with its own non-redirecting HTTP client.
    pub fn new() -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self { http })
    }
}

impl Authorizer for HeadlessAuthorizer {
    fn redirect_uri(&self, port: Option<u16>) -> AuthorizeFuture<'_, String> {
        // Nothing listens: the redirect is read from the Location header, never followed.
        let uri = format!("http://127.0.0.1:{}/callback", port.unwrap_or(33418));
        Box::pin(async move { Ok(uri) })
    }

    fn authorize(&self, prompt: AuthorizationPrompt) -> AuthorizeFuture<'_, String> {
        Box::pin(async move {
            let response = self
                .http
                .get(&prompt.url)
                .send()
                .await
                .map_err(|e| format!("the authorization request failed: {e}"))?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            match location {
                Some(location) if status.is_redirection() => Ok(location),
                _ => {
                    // Enough bytes for the 300 characters quoted, however they are encoded.
                    let body = crate::http_body::read_prefix(response, 4 * 300, None).await;
                    Err(format!(
                        "the authorization server answered {status} without a redirect: {}",
                        String::from_utf8_lossy(&body)
                            .chars()
                            .take(300)
                            .collect::<String>()
                    ))
                }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_receives_the_redirect() {
        let authorizer = LoopbackAuthorizer::new()
            .without_browser()
            .with_timeout(Duration::from_secs(10));
        let uri = authorizer.redirect_uri(None).await.unwrap();
        assert!(uri.starts_with("http://127.0.0.1:"), "{uri}");
        let prompt = AuthorizationPrompt {
            server: "s".into(),
            url: "https://as.example/authorize".into(),
            redirect_uri: uri.clone(),
            scopes: String::new(),
        };
        let waiting = tokio::spawn(async move { authorizer.authorize(prompt).await });
        let client = reqwest::Client::new();
        // A stray request (a favicon) is answered and does not end the wait.
        let stray = client
            .get(uri.replace("/callback", "/favicon.ico"))
            .send()
            .await
            .unwrap();
        assert_eq!(stray.status(), 404);
        let page = client
            .get(format!("{uri}?code=abc&state=xyz"))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        let redirect = waiting.await.unwrap().unwrap();
        assert_eq!(redirect, format!("{uri}?code=abc&state=xyz"));
    }
}
