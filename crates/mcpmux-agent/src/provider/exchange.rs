//! The one request loop every provider runs: build the body, POST it with the wire's headers,
//! retry what may be retried, and read the answer whole or as server-sent events. A wire
//! format ([`Wire`]) supplies only what differs: the request's shape, its headers, how a whole
//! answer reads and how a stream's events add up to a turn. Knows no wire format itself.

use serde_json::Value;

use super::http::{self, Endpoint, Event, Failure};
use super::{EventSink, ModelRequest, ModelTurn, ProviderConfig, ProviderError};

/// What a wire format supplies to the loop.
pub(super) trait Wire: Sync {
    /// The format's name in errors (`OpenAI chat completions`).
    const NAME: &'static str;
    /// What a streamed answer is gathered in, event by event.
    type Stream: Streamed;
    /// The request's body.
    fn body(&self, config: &ProviderConfig, request: &ModelRequest<'_>) -> Value;
    /// The request's headers beyond the JSON content type (the key, a version).
    fn headers(&self, config: &ProviderConfig) -> Vec<(&'static str, String)>;
    /// A whole (not streamed) answer as a turn, or what is wrong with it.
    fn read_answer(value: &Value) -> Result<ModelTurn, String>;
}

/// Whether a stream's answer goes on after an event.
pub(super) enum Step {
    /// More events belong to it.
    More,
    /// The answer's end marker came: later bytes are not read.
    Done,
}

/// A streamed answer being gathered.
pub(super) trait Streamed: Default + Send {
    /// Takes one event; a stream's own error event is a [`Failure`].
    fn event(&mut self, event: &Event, turn: &Turn<'_>) -> Result<Step, Failure>;
    /// The turn, once the stream has ended (with its end marker or not).
    fn finish(self, turn: &Turn<'_>) -> Result<ModelTurn, Failure>;
}

/// One attempt's reading of a stream: where it came from, whom to tell, which attempt.
pub(super) struct Turn<'a> {
    endpoint: &'a Endpoint<'a>,
    wire: &'static str,
    /// Where text and tool-call starts are reported as they arrive.
    pub events: EventSink<'a>,
    /// The attempt (1 for the first), named in a stream error.
    pub attempts: u32,
}

impl Turn<'_> {
    /// A fatal failure: the answer is not the format's.
    pub fn malformed(&self, message: String) -> Failure {
        Failure::fatal(malformed(self.endpoint, self.wire, message))
    }

    /// The stream broke off or carried an error (`message` is the server's, cut).
    pub fn stream_error(&self, message: String) -> ProviderError {
        ProviderError::Stream {
            url: self.endpoint.url.to_string(),
            message,
            attempts: self.attempts,
        }
    }

    /// `data` as JSON; else a malformed answer naming `what` it was (`an event`, `a chunk`).
    pub fn json(&self, data: &str, what: &str) -> Result<Value, Failure> {
        serde_json::from_str(data).map_err(|e| self.malformed(format!("{what} is not JSON: {e}")))
    }
}

/// What every provider holds: its settings, the URL it posts to, the client it posts with.
#[derive(Debug)]
pub(super) struct Exchange {
    /// The provider's settings.
    pub config: ProviderConfig,
    url: String,
    variable: &'static str,
    client: reqwest::Client,
}

impl Exchange {
    /// Posts to `url`; `variable` is the setting of its base, named when nothing answers.
    pub fn new(config: ProviderConfig, url: String, variable: &'static str) -> Self {
        Exchange {
            config,
            url,
            variable,
            client: http::client(),
        }
    }

    /// One request of `wire`'s format, retried as the settings allow.
    pub async fn complete<W: Wire>(
        &self,
        wire: &W,
        request: ModelRequest<'_>,
        events: EventSink<'_>,
    ) -> Result<ModelTurn, ProviderError> {
        let body = wire.body(&self.config, &request);
        let headers = wire.headers(&self.config);
        let endpoint = Endpoint {
            client: &self.client,
            url: &self.url,
            variable: self.variable,
            idle: self.config.idle_timeout,
        };
        http::with_retries(&self.config.retry, events, |attempts| {
            self.attempt::<W>(&endpoint, &headers, &body, events, attempts)
        })
        .await
    }

    async fn attempt<W: Wire>(
        &self,
        endpoint: &Endpoint<'_>,
        headers: &[(&'static str, String)],
        body: &Value,
        events: EventSink<'_>,
        attempts: u32,
    ) -> Result<ModelTurn, Failure> {
        let response = endpoint.post(headers, body, attempts).await?;
        if self.config.stream {
            let turn = Turn {
                endpoint,
                wire: W::NAME,
                events,
                attempts,
            };
            let mut reader = endpoint.events(response, attempts);
            let mut stream = W::Stream::default();
            while let Some(event) = endpoint.next_event(&mut reader).await? {
                if let Step::Done = stream.event(&event, &turn)? {
                    break;
                }
            }
            return stream.finish(&turn);
        }
        let value = endpoint.read_json(response, W::NAME, attempts).await?;
        let turn =
            W::read_answer(&value).map_err(|m| Failure::fatal(malformed(endpoint, W::NAME, m)))?;
        turn.announce(events);
        Ok(turn)
    }
}

fn malformed(endpoint: &Endpoint<'_>, wire: &'static str, message: String) -> ProviderError {
    ProviderError::Malformed {
        url: endpoint.url.to_string(),
        provider: wire,
        message,
    }
}
