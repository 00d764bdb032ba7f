//! What both wire formats share on HTTP: one pooled client that follows no redirect (an API key
//! must never reach another host), retries of rate limits, overloads and broken streams with
//! backoff that honours `retry-after`, bounded and time-limited reading of a JSON answer or of
//! server-sent events (the library's bounded body read and SSE parser). Knows nothing of either provider's JSON.

use std::future::Future;
use std::time::Duration;

use mcpmux::cli_support::http_body::{BodyError, read_body, read_prefix};
use mcpmux::cli_support::sse::{SseItem, SseParser};
use serde_json::Value;

use super::{EventSink, ProviderError, StreamEvent};

/// Most bytes one answer may have: far beyond any real turn, small enough for any machine.
pub(super) const MAX_ANSWER_BYTES: usize = 16 << 20;
/// Most bytes of one server-sent event: a streamed chunk is a small JSON object; a longer event
/// is refused as soon as it passes the bound.
pub(super) const MAX_EVENT_BYTES: usize = 1 << 20;
/// Most bytes of an error answer read for its message.
const MAX_ERROR_BYTES: usize = 64 << 10;
/// Most characters of a provider's error message repeated in ours.
const MAX_MESSAGE_CHARS: usize = 300;

/// How failed requests are tried again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Tries after the first (0: none).
    pub max_retries: u32,
    /// The first wait; doubled each time, with ±25 % jitter.
    pub base_delay: Duration,
    /// The longest wait; a `retry-after` longer than this is not waited for: the error is
    /// reported at once.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Three retries, 1 s, 2 s, 4 s; a `retry-after` of up to a minute is honoured (the
    /// providers' rate-limit windows are a minute).
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// `retries` tries after the first, starting at `base` and never waiting over `max`.
    pub fn new(retries: u32, base: Duration, max: Duration) -> Self {
        RetryPolicy {
            max_retries: retries,
            base_delay: base,
            max_delay: max,
        }
    }

    /// The wait before retry `attempt` (1-based), or `None` when the server asks for more
    /// than [`RetryPolicy::max_delay`].
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(after) = retry_after {
            return (after <= self.max_delay).then_some(after);
        }
        let doubled = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        Some(jitter(doubled).min(self.max_delay))
    }
}

/// `delay` × [0.75, 1.25): retries of many clients do not arrive together.
fn jitter(delay: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let factor = 0.75 + f64::from(nanos % 1000) / 2000.0;
    delay.mul_f64(factor)
}

/// One attempt that failed, and whether another may follow.
#[derive(Debug)]
pub(super) struct Failure {
    pub error: ProviderError,
    pub retryable: bool,
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn fatal(error: ProviderError) -> Self {
        Failure {
            error,
            retryable: false,
            retry_after: None,
        }
    }

    pub fn transient(error: ProviderError) -> Self {
        Failure {
            error,
            retryable: true,
            retry_after: None,
        }
    }
}

/// Runs `attempt(n)` until it succeeds, fails for good, or the retries are spent; each wait
/// is announced on `events`.
pub(super) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    events: EventSink<'_>,
    mut attempt: F,
) -> Result<T, ProviderError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut n = 0;
    loop {
        n += 1;
        let failure = match attempt(n).await {
            Ok(value) => return Ok(value),
            Err(failure) => failure,
        };
        if !failure.retryable || n > policy.max_retries {
            return Err(failure.error);
        }
        let Some(wait) = policy.delay(n, failure.retry_after) else {
            return Err(failure.error);
        };
        tracing::debug!(attempt = n, ?wait, error = %failure.error, "model request retried");
        events(StreamEvent::Retrying {
            attempt: n,
            after: wait,
            reason: failure.error.to_string(),
        });
        tokio::time::sleep(wait).await;
    }
}

/// The client every request of a provider goes through.
pub(super) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default()
}

/// `base` without a trailing `/`, if it is an http(s) URL.
pub(super) fn base_url(base: &str, variable: &'static str) -> Result<String, ProviderError> {
    let trimmed = base.trim().trim_end_matches('/');
    match url::Url::parse(trimmed) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
            Ok(trimmed.to_string())
        }
        _ => Err(ProviderError::BadBaseUrl {
            variable,
            url: base.to_string(),
        }),
    }
}

/// Where a request goes and how long it may wait.
pub(super) struct Endpoint<'a> {
    pub client: &'a reqwest::Client,
    pub url: &'a str,
    /// The variable that sets the base URL, named when nothing answers.
    pub variable: &'static str,
    pub idle: Duration,
}

impl Endpoint<'_> {
    /// POSTs `body` with `headers`; a 2xx answer is returned, anything else is a [`Failure`]
    /// (429, 408, 5xx and 529 retryable, with the server's `retry-after`).
    pub async fn post(
        &self,
        headers: &[(&str, String)],
        body: &Value,
        attempts: u32,
    ) -> Result<reqwest::Response, Failure> {
        let mut request = self.client.post(self.url).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = match tokio::time::timeout(self.idle, request.send()).await {
            Err(_) => return Err(Failure::transient(self.timeout())),
            Ok(Err(e)) if e.is_connect() => {
                return Err(Failure::fatal(ProviderError::Unreachable {
                    url: self.url.to_string(),
                    message: root_cause(&e),
                    variable: self.variable,
                }));
            }
            Ok(Err(e)) => {
                return Err(Failure::transient(ProviderError::Stream {
                    url: self.url.to_string(),
                    message: error_chain(&e),
                    attempts,
                }));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        // The start of an error answer is enough for its message, however long it is.
        let body = read_prefix(response, MAX_ERROR_BYTES, Some(self.idle)).await;
        let error = ProviderError::Status {
            url: self.url.to_string(),
            status: status.as_u16(),
            message: error_message(&body),
            attempts,
        };
        let retryable = matches!(status.as_u16(), 408 | 429 | 500 | 502 | 503 | 504 | 529);
        Err(Failure {
            error,
            retryable,
            retry_after,
        })
    }

    /// The whole answer as JSON, within [`MAX_ANSWER_BYTES`] and the idle time.
    pub async fn read_json(
        &self,
        response: reqwest::Response,
        provider: &'static str,
        attempts: u32,
    ) -> Result<Value, Failure> {
        let bytes = self
            .read_limited(response, MAX_ANSWER_BYTES, attempts)
            .await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Failure::fatal(ProviderError::Malformed {
                url: self.url.to_string(),
                provider,
                message: format!("not JSON: {e}"),
            })
        })
    }

    async fn read_limited(
        &self,
        response: reqwest::Response,
        limit: usize,
        attempts: u32,
    ) -> Result<Vec<u8>, Failure> {
        read_body(response, limit, Some(self.idle))
            .await
            .map_err(|error| match error {
                BodyError::TooLarge { .. } => Failure::fatal(self.too_large(limit)),
                BodyError::Broken(e) => Failure::transient(self.broken(&e, attempts)),
                _ => Failure::transient(self.timeout()),
            })
    }

    /// The answer as server-sent events.
    pub fn events(&self, response: reqwest::Response, attempts: u32) -> SseReader {
        SseReader {
            response: Some(response),
            parser: SseParser::new(MAX_EVENT_BYTES),
            seen: 0,
            attempts,
        }
    }

    pub fn timeout(&self) -> ProviderError {
        ProviderError::Timeout {
            url: self.url.to_string(),
            after: self.idle,
        }
    }

    fn broken(&self, e: &reqwest::Error, attempts: u32) -> ProviderError {
        ProviderError::Stream {
            url: self.url.to_string(),
            message: error_chain(e),
            attempts,
        }
    }

    fn too_large(&self, limit: usize) -> ProviderError {
        ProviderError::Malformed {
            url: self.url.to_string(),
            provider: "model",
            message: format!("the answer is larger than {} MiB", limit >> 20),
        }
    }

    /// The next event of `reader`, each read of the stream within the idle time.
    pub async fn next_event(&self, reader: &mut SseReader) -> Result<Option<Event>, Failure> {
        loop {
            match reader.parser.next_event() {
                Some(SseItem::Event { kind, data }) => {
                    return Ok(Some(Event { event: kind, data }));
                }
                Some(_) => return Err(Failure::fatal(self.event_too_large())),
                None if reader.parser.over_bound() => {
                    return Err(Failure::fatal(self.event_too_large()));
                }
                None => {}
            }
            let Some(response) = reader.response.as_mut() else {
                return Ok(None);
            };
            match tokio::time::timeout(self.idle, response.chunk()).await {
                Err(_) => return Err(Failure::transient(self.timeout())),
                Ok(Ok(None)) => reader.response = None,
                Ok(Ok(Some(chunk))) => {
                    reader.seen = reader.seen.saturating_add(chunk.len());
                    if reader.seen > MAX_ANSWER_BYTES {
                        return Err(Failure::fatal(self.too_large(MAX_ANSWER_BYTES)));
                    }
                    reader.parser.feed(&chunk);
                }
                Ok(Err(e)) => return Err(Failure::transient(self.broken(&e, reader.attempts))),
            }
        }
    }

    fn event_too_large(&self) -> ProviderError {
        ProviderError::Malformed {
            url: self.url.to_string(),
            provider: "server-sent events",
            message: format!("an event is longer than {} MiB", MAX_EVENT_BYTES >> 20),
        }
    }
}

/// One server-sent event of an answer.
#[derive(Debug)]
pub(super) struct Event {
    /// Its `event` field (`message` when absent).
    pub event: String,
    pub data: String,
}

/// Server-sent events of one answer, read as they are asked for.
pub(super) struct SseReader {
    /// `None` once the answer has ended.
    response: Option<reqwest::Response>,
    parser: SseParser,
    /// Bytes read so far, bounded by [`MAX_ANSWER_BYTES`].
    seen: usize,
    attempts: u32,
}

/// `retry-after-ms`, else `retry-after` in seconds or as an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = when.signed_duration_since(chrono::Utc::now());
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// The provider's words from an error body (`{"error": {"message": …}}` in both formats),
/// else the body itself, cut short and free of control characters.
fn error_message(body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    short(&text)
}

/// `text` cut to [`MAX_MESSAGE_CHARS`], control characters escaped.
pub(super) fn short(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    if text.chars().count() > MAX_MESSAGE_CHARS {
        out.push('…');
    }
    mcpmux::cli_support::terminal::escape_controls(&out).into_owned()
}

/// The innermost source of `e`: for a refused connection, "Connection refused (os error 111)".
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(source) = cause.source() {
        cause = source;
    }
    short(&cause.to_string())
}

/// `e` with its sources: reqwest's own message alone says little ("error sending request").
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    short(&text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut headers = HeaderMap::new();
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn a_wait_longer_than_the_policy_allows_is_not_waited_for() {
        let policy = RetryPolicy::new(3, Duration::from_millis(10), Duration::from_secs(5));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(6))), None);
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(5))),
            Some(Duration::from_secs(5))
        );
        let third = policy.delay(3, None).unwrap();
        assert!(
            third >= Duration::from_millis(30) && third < Duration::from_millis(50),
            "{third:?}"
        );
    }

    #[test]
    fn error_messages_are_the_providers_words_cut_and_escaped() {
        let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded\u001b[2J"}}"#;
        assert_eq!(error_message(body), "Overloaded\\x1b[2J");
        let long = "x".repeat(1000);
        assert_eq!(error_message(long.as_bytes()).chars().count(), 301);
    }
}
