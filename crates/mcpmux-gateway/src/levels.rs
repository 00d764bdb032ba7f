//! The log level of each live handshake-era session, and the one asked of the upstream
//! servers. A session's level filters only its own stream (`admits`); the servers are shared,
//! so they are asked (`logging/setLevel` upstream) for the most verbose level any live session
//! wants, and asked again when a session sets its level or ends. A session that set none takes
//! every message its calls cause, as it would from a server alone (whose default is to send
//! what it sends): it counts as wanting `debug`, so another session's `setLevel` never cuts
//! its stream. Knows nothing of transports or of which log goes where.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mcpmux::host::LogLevel;

/// The sessions' levels and the level last asked upstream.
pub struct Levels {
    hub: mcpmux::Hub,
    /// Live sessions → the level each set (`None`: none set, every message).
    wanted: Mutex<HashMap<u64, Option<LogLevel>>>,
    /// The level last asked of the servers (`None`: never asked: their own default). Held
    /// while asking, so that asks reach the servers in the order they were decided.
    asked: tokio::sync::Mutex<Option<LogLevel>>,
}

impl Levels {
    /// No session yet; the servers of `hub` are asked nothing until one sets a level.
    pub fn new(hub: mcpmux::Hub) -> Arc<Self> {
        Arc::new(Levels {
            hub,
            wanted: Mutex::default(),
            asked: tokio::sync::Mutex::new(None),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Option<LogLevel>>> {
        mcpmux::cli_support::sync::lock(&self.wanted)
    }

    /// `session` began (it sent `notifications/initialized`), with no level set: the servers
    /// are asked again if another's level had them send less than everything (a session
    /// parked, or born parked, joins when it is brought back).
    pub async fn join(&self, session: u64) {
        self.lock().entry(session).or_insert(None);
        self.reconcile().await;
    }

    /// `session` set `level` (`logging/setLevel`): the servers are asked again if the lowest
    /// level wanted changed.
    pub async fn set(&self, session: u64, level: LogLevel) {
        self.lock().insert(session, Some(level));
        self.reconcile().await;
    }

    /// `session` ended: the servers are asked again (later: a session ends in a `Drop`) if
    /// the lowest level wanted changed.
    pub fn leave_later(self: &Arc<Self>, session: u64) {
        if self.lock().remove(&session).is_none() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let levels = self.clone();
            runtime.spawn(async move { levels.reconcile().await });
        }
    }

    /// Whether `session`'s level admits a message at `level` (a session that set none takes
    /// every message).
    pub fn admits(&self, session: u64, level: LogLevel) -> bool {
        self.lock()
            .get(&session)
            .copied()
            .flatten()
            .is_none_or(|wanted| level >= wanted)
    }

    /// Asks the servers for the lowest level a live session wants, if it is not the one last
    /// asked.
    async fn reconcile(&self) {
        let mut asked = self.asked.lock().await;
        let Some(lowest) = lowest(&self.lock(), *asked) else {
            return;
        };
        if *asked == Some(lowest) {
            return;
        }
        *asked = Some(lowest);
        tracing::debug!(level = ?lowest, "asking the servers for the logs the sessions want");
        for error in self.hub.set_log_level(lowest).await {
            tracing::debug!(%error, "logging/setLevel not passed on");
        }
    }
}

/// The level to ask of the servers when the live sessions want `wanted` and `asked` was last
/// asked: the lowest wanted, a session without one counting as `debug`; `None` (ask nothing)
/// when no session is live, or none has set a level and the servers were never asked (their
/// default then serves everyone).
fn lowest(wanted: &HashMap<u64, Option<LogLevel>>, asked: Option<LogLevel>) -> Option<LogLevel> {
    if asked.is_none() && wanted.values().all(Option::is_none) {
        return None;
    }
    wanted
        .values()
        .map(|level| level.unwrap_or(LogLevel::Debug))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(levels: &[(u64, Option<LogLevel>)]) -> HashMap<u64, Option<LogLevel>> {
        levels.iter().copied().collect()
    }

    #[test]
    fn the_servers_are_asked_for_the_most_any_live_session_wants() {
        use LogLevel::{Debug, Error, Info};
        // Nobody asked anything: the servers keep their default.
        assert_eq!(lowest(&of(&[(1, None), (2, None)]), None), None);
        // One asks for errors while another set nothing: nothing is cut for the other.
        assert_eq!(
            lowest(&of(&[(1, None), (2, Some(Error))]), None),
            Some(Debug)
        );
        assert_eq!(
            lowest(&of(&[(1, Some(Info)), (2, Some(Error))]), None),
            Some(Info)
        );
        // The verbose one left: the rest want errors only.
        assert_eq!(lowest(&of(&[(2, Some(Error))]), Some(Info)), Some(Error));
        // Nobody is left: nothing to ask.
        assert_eq!(lowest(&of(&[]), Some(Error)), None);
    }
}
