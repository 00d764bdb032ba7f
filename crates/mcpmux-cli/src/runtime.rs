//! The async runtime a command runs on: one thread, or a multi-thread runtime of N workers;
//! and the signals that end a command (`interrupted`).
//! `serve` runs on one thread unless told otherwise (`--threads`): a call through the gateway
//! hops between several tasks, and on one thread none of those hops wakes another thread
//! (measured on 2 shared cores: the gateway's added latency p50 40-90 µs lower). `call` runs
//! on one thread too (one request to one server); every other command on two workers.

/// A runtime of `threads` threads (1: current-thread), timers and IO enabled.
pub fn build(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(n);
            builder
        }
    };
    builder.enable_all().build()
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM. A Ctrl-C while a server's question is open at the
/// terminal ends that question instead (`console`); the next one is ours.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // Made once: a stream keeps every Ctrl-C, where a fresh `ctrl_c()` misses one that
        // comes between two waits.
        let (Ok(mut interrupt), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        loop {
            tokio::select! {
                _ = interrupt.recv() => {
                    if !crate::console::interrupt_question() {
                        return;
                    }
                }
                _ = term.recv() => return,
            }
        }
    }
    #[cfg(not(unix))]
    {
        loop {
            let _ = tokio::signal::ctrl_c().await;
            if !crate::console::interrupt_question() {
                return;
            }
        }
    }
}
