//! Waiting for a condition with a deadline: the one polling loop every test uses, in an async and
//! a blocking form. The caller says what a timeout means (its own assertion and message).

use std::future::Future;
use std::time::{Duration, Instant};

/// Checks `check` every `every` until it gives a value, for at most `within` (always at least
/// once); `None` when time ran out.
pub async fn eventually<T>(
    within: Duration,
    every: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    eventually_async(within, every, || std::future::ready(check())).await
}

/// [`eventually`] for a check that awaits (a call, a request).
pub async fn eventually_async<T, F: Future<Output = Option<T>>>(
    within: Duration,
    every: Duration,
    mut check: impl FnMut() -> F,
) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}

/// [`eventually`] off any runtime: sleeps the thread between checks.
pub fn eventually_blocking<T>(
    within: Duration,
    every: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every);
    }
}
