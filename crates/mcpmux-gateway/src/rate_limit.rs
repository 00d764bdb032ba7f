//! Per-client rate limits: a token bucket per client (GCRA, `governor`) in a table bounded in
//! memory. A client idle long enough for its bucket to refill is indistinguishable from a new
//! one and is dropped at the next sweep; when the table is full of active clients, newcomers
//! share one overflow bucket, while the clients already known keep theirs. Knows nothing of
//! HTTP or of how a client was identified.

use std::collections::HashMap;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::nanos::Nanos;
use governor::state::StateStore;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::{Quota, RateLimiter};

/// Most clients whose buckets are kept (a bucket is a few dozen bytes).
pub const DEFAULT_MAX_CLIENTS: usize = 100_000;
/// How often idle buckets are swept out, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// So many requests per period: `50/s`, `600/min`, `1000/h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    count: NonZeroU32,
    per: Duration,
}

/// A rate that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "rate {0:?}: write COUNT/UNIT, e.g. 50/s, 600/min or 1000/h (COUNT from 1, at most 1 per ns)"
)]
pub struct RateParseError(String);

impl FromStr for Rate {
    type Err = RateParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = || RateParseError(text.to_string());
        let (count, unit) = text.trim().split_once('/').ok_or_else(fail)?;
        let count: NonZeroU32 = count.trim().parse().map_err(|_| fail())?;
        let per = match unit.trim().to_ascii_lowercase().as_str() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(fail()),
        };
        if (per / count.get()).is_zero() {
            return Err(fail());
        }
        Ok(Rate { count, per })
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.count)
    }
}

/// How much each client may send.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RateLimit {
    /// The sustained rate.
    pub rate: Rate,
    /// Requests a client may send at once after a pause (the bucket's size); the rate's count
    /// when not given.
    pub burst: Option<NonZeroU32>,
    /// Most clients tracked each with a bucket of its own.
    pub max_clients: usize,
}

impl RateLimit {
    /// `rate` for each client, the burst its count.
    pub fn new(rate: Rate) -> Self {
        Self {
            rate,
            burst: None,
            max_clients: DEFAULT_MAX_CLIENTS,
        }
    }

    fn quota(&self) -> Quota {
        let period = self.rate.per / self.rate.count.get();
        // `Rate::from_str` refuses a period of zero; one nanosecond stands in should one be
        // built otherwise.
        Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(self.burst.unwrap_or(self.rate.count))
    }
}

/// The buckets: one per known client, one shared by the clients that found the table full.
struct Buckets<K> {
    table: Mutex<Table<K>>,
    max: usize,
}

struct Table<K> {
    /// Each client's theoretical arrival time (GCRA's whole state).
    known: HashMap<K, Nanos>,
    overflow: Option<Nanos>,
}

impl<K: Hash + Eq + Clone> StateStore for Buckets<K> {
    type Key = K;

    fn measure_and_replace<T, F, E>(&self, key: &K, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let mut table = mcpmux::cli_support::sync::lock(&self.table);
        let known = table.known.get(key).copied();
        if known.is_some() || table.known.len() < self.max {
            let (outcome, next) = f(known)?;
            table.known.insert(key.clone(), next);
            Ok(outcome)
        } else {
            let (outcome, next) = f(table.overflow)?;
            table.overflow = Some(next);
            Ok(outcome)
        }
    }
}

impl<K: Hash + Eq + Clone> ShrinkableKeyedStateStore<K> for Buckets<K> {
    fn retain_recent(&self, drop_below: Nanos) {
        let mut table = mcpmux::cli_support::sync::lock(&self.table);
        table.known.retain(|_, at| *at >= drop_below);
        if table.overflow.is_some_and(|at| at < drop_below) {
            table.overflow = None;
        }
    }

    fn shrink_to_fit(&self) {
        let mut table = mcpmux::cli_support::sync::lock(&self.table);
        table.known.shrink_to_fit();
    }

    fn len(&self) -> usize {
        let table = mcpmux::cli_support::sync::lock(&self.table);
        table.known.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Rate limits for clients named by `K`.
pub(crate) struct Limiter<K: Hash + Eq + Clone> {
    limiter: RateLimiter<K, Buckets<K>, DefaultClock>,
    clock: DefaultClock,
    swept: Mutex<Instant>,
}

impl<K: Hash + Eq + Clone> Limiter<K> {
    pub(crate) fn new(limit: &RateLimit) -> Self {
        let clock = DefaultClock::default();
        let buckets = Buckets {
            table: Mutex::new(Table {
                known: HashMap::new(),
                overflow: None,
            }),
            max: limit.max_clients.max(1),
        };
        Self {
            limiter: RateLimiter::new(limit.quota(), buckets, clock.clone()),
            clock,
            swept: Mutex::new(Instant::now()),
        }
    }

    /// Takes one request from `client`'s bucket, or says how long until one is there.
    pub(crate) fn check(&self, client: &K) -> Result<(), Duration> {
        self.sweep_when_due();
        self.limiter
            .check_key(client)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// How many clients have a bucket of their own.
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.limiter.len()
    }

    /// Drops the buckets that refilled (their clients went idle), every so often.
    fn sweep_when_due(&self) {
        let Ok(mut swept) = self.swept.try_lock() else {
            return;
        };
        if swept.elapsed() >= SWEEP_EVERY {
            *swept = Instant::now();
            drop(swept);
            self.sweep();
        }
    }

    fn sweep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn limit(rate: &str, burst: u32, max_clients: usize) -> RateLimit {
        let mut limit = RateLimit::new(rate.parse().unwrap());
        limit.burst = NonZeroU32::new(burst);
        limit.max_clients = max_clients;
        limit
    }

    #[test]
    fn rates_are_read_as_count_per_unit() {
        let rate: Rate = "50/s".parse().unwrap();
        assert_eq!(rate.to_string(), "50/s");
        assert_eq!("600/min".parse::<Rate>().unwrap().to_string(), "600/min");
        assert_eq!(" 2 / H ".parse::<Rate>().unwrap().to_string(), "2/h");
        for bad in ["", "50", "0/s", "-1/s", "5/day", "x/s", "4294967295/s"] {
            let error = bad.parse::<Rate>().err().unwrap().to_string();
            assert!(error.contains("50/s"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_client_past_its_burst_waits_and_others_are_unaffected() {
        let limiter = Limiter::new(&limit("1/h", 2, 100));
        assert!(limiter.check(&"a").is_ok());
        assert!(limiter.check(&"a").is_ok());
        let wait = limiter.check(&"a").unwrap_err();
        assert!(wait > Duration::from_secs(3000) && wait <= Duration::from_secs(3600));
        assert!(limiter.check(&"b").is_ok());
    }

    #[test]
    fn a_full_table_keeps_known_clients_and_shares_one_bucket_among_newcomers() {
        let limiter = Limiter::new(&limit("1/h", 1, 2));
        assert!(limiter.check(&"a").is_ok());
        assert!(limiter.check(&"b").is_ok());
        // Full: c takes the shared bucket, d finds it empty.
        assert!(limiter.check(&"c").is_ok());
        assert!(limiter.check(&"d").is_err());
        assert!(limiter.check(&"a").is_err());
        assert_eq!(limiter.clients(), 2);
    }

    #[test]
    fn idle_clients_are_swept_out() {
        // One request per millisecond: a bucket refills within a few milliseconds.
        let limiter = Limiter::new(&limit("1000/s", 1, 100));
        for client in 0..50 {
            assert!(limiter.check(&client).is_ok());
        }
        assert_eq!(limiter.clients(), 50);
        std::thread::sleep(Duration::from_millis(20));
        limiter.sweep();
        assert_eq!(limiter.clients(), 0);
    }
}
