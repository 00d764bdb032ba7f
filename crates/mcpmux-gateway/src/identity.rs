//! Who a request is, as the door decided it: the client the door admitted (a token's subject,
//! a static token's name, or the peer's address), the access rule it holds, and whether it
//! showed credentials. The door puts it in the request's extensions and runs the rest of the
//! request inside [`ServedRequest::scope`], so what rmcp calls on the request's behalf without the
//! request in hand (the session manager, the handler factory) can read it with
//! [`ServedRequest::current`]; and notes there why a session was refused, for the door to answer
//! it. Over stdio there is no door: the one client is [`Identity::local`]. Knows nothing of
//! HTTP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::access::{AskRoute, Rule};
use crate::guard::Client;

/// Who a request comes from, and what it may do.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// Who (what rate limits are counted by and sessions are bound to).
    pub client: Client,
    /// What it may use.
    pub rule: Arc<Rule>,
    /// Whether it showed credentials (a token): then it is never the local client, whatever
    /// address it comes from.
    pub authenticated: bool,
}

impl Identity {
    /// The one client of stdio, or of a gateway without authentication on loopback: the whole
    /// authority of the gateway, a policy `ask` put to it.
    pub fn local() -> Self {
        Identity {
            client: Client::Peer(std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)),
            rule: Arc::new(Rule::default()),
            authenticated: false,
        }
    }

    /// Whether the client is a peer on this machine that showed no credentials.
    pub fn is_local(&self) -> bool {
        !self.authenticated && matches!(self.client, Client::Peer(ip) if ip.is_loopback())
    }

    /// Where a policy `ask` of this identity's calls goes: its rule's route, else the
    /// gateway's (`--ask`), else to the client for a local peer and refused for anyone else
    /// (a remote agent that accepts every elicitation would approve its own calls).
    pub fn ask_route(&self, gateway: Option<AskRoute>) -> AskRoute {
        self.rule.ask.or(gateway).unwrap_or(if self.is_local() {
            AskRoute::Client
        } else {
            AskRoute::Deny
        })
    }
}

/// Why the session manager refused a request (the door answers it; rmcp would say 500).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The session id names a session of another identity: unknown to this one (404).
    NotFound,
    /// A second `GET /mcp` stream of a session while its first is open (409).
    StreamHeld,
    /// Too many sessions: 503 with `Retry-After`.
    Full {
        /// When to try again.
        retry_after: Duration,
    },
}

/// The identity of the request being served, and what the session manager decided of it.
pub(crate) struct ServedRequest {
    /// Who.
    pub identity: Identity,
    refused: Mutex<Option<Refused>>,
    /// The handler made for the session this request opens, for the session manager to keep
    /// (what it is, the session manager need not know).
    made: Mutex<Option<Made>>,
    /// It is a `GET` (a session's stream, served from its outbox: a parked session is not
    /// brought back for it).
    listening: std::sync::atomic::AtomicBool,
}

/// A session's handler, as the session manager keeps it.
pub(crate) type Made = Arc<dyn std::any::Any + Send + Sync>;

tokio::task_local! {
    static CALLER: Arc<ServedRequest>;
}

impl ServedRequest {
    /// Runs `serve` (the rest of a request) as `identity`'s.
    pub async fn scope<F: Future>(identity: Identity, serve: F) -> (F::Output, Option<Refused>) {
        let caller = Arc::new(ServedRequest {
            identity,
            refused: Mutex::new(None),
            made: Mutex::new(None),
            listening: std::sync::atomic::AtomicBool::new(false),
        });
        let output = CALLER.scope(caller.clone(), serve).await;
        let refused = *mcpmux::cli_support::sync::lock(&caller.refused);
        (output, refused)
    }

    /// The identity of the request being served, if any (none outside a request: a session
    /// closing by itself, or stdio).
    pub fn current() -> Option<Identity> {
        CALLER.try_with(|caller| caller.identity.clone()).ok()
    }

    /// Keeps `handler`, made for the session this request opens, for the session manager.
    pub fn made(handler: Made) {
        let _ = CALLER.try_with(|caller| {
            *mcpmux::cli_support::sync::lock(&caller.made) = Some(handler);
        });
    }

    /// The handler made for the session this request opens, if one was.
    pub fn take_made() -> Option<Made> {
        CALLER
            .try_with(|caller| mcpmux::cli_support::sync::lock(&caller.made).take())
            .ok()
            .flatten()
    }

    /// Notes that the request being served is a `GET` (nothing outside a request).
    pub fn listening() {
        let _ = CALLER.try_with(|caller| {
            caller
                .listening
                .store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }

    /// Whether the request being served is a `GET`.
    pub fn is_listening() -> bool {
        CALLER
            .try_with(|caller| caller.listening.load(std::sync::atomic::Ordering::Relaxed))
            .unwrap_or(false)
    }

    /// Notes why the request being served was refused (nothing outside a request).
    pub fn refuse(refused: Refused) {
        let _ = CALLER.try_with(|caller| {
            *mcpmux::cli_support::sync::lock(&caller.refused) = Some(refused);
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[tokio::test]
    async fn the_identity_is_known_inside_its_request_only() {
        assert!(ServedRequest::current().is_none());
        let identity = Identity {
            client: Client::Subject("alice".into()),
            rule: Arc::default(),
            authenticated: true,
        };
        let (seen, refused) = ServedRequest::scope(identity, async {
            ServedRequest::refuse(Refused::NotFound);
            ServedRequest::current().map(|i| i.client)
        })
        .await;
        assert_eq!(seen, Some(Client::Subject("alice".into())));
        assert_eq!(refused, Some(Refused::NotFound));
        // Outside a request a refusal goes nowhere, and nothing panics.
        ServedRequest::refuse(Refused::NotFound);
    }

    #[test]
    fn an_ask_goes_to_a_local_client_and_is_refused_for_others_unless_told() {
        let local = Identity::local();
        assert_eq!(local.ask_route(None), AskRoute::Client);
        assert_eq!(local.ask_route(Some(AskRoute::Deny)), AskRoute::Deny);
        let remote = Identity {
            client: Client::Subject("bob".into()),
            rule: Arc::default(),
            authenticated: true,
        };
        assert_eq!(remote.ask_route(None), AskRoute::Deny);
        assert_eq!(remote.ask_route(Some(AskRoute::Client)), AskRoute::Client);
        let lan = Identity {
            client: Client::Peer("10.0.0.2".parse().unwrap()),
            rule: Arc::default(),
            authenticated: false,
        };
        assert_eq!(lan.ask_route(None), AskRoute::Deny);
        // A token without `sub` or `client_id` is named by its address: still not local.
        let unnamed = Identity {
            client: Client::Peer("127.0.0.1".parse().unwrap()),
            rule: Arc::default(),
            authenticated: true,
        };
        assert_eq!(unnamed.ask_route(None), AskRoute::Deny);
    }
}
