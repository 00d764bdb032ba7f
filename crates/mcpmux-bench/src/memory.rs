//! The resident set of a process, from `/proc` (Linux).

use anyhow::Context;

/// The resident set size now of process `pid` (`self` for this one), in KiB.
pub fn rss_kib(pid: &str) -> anyhow::Result<u64> {
    status_kib(pid, "VmRSS:")
}

/// Peak resident set size since the last reset, in KiB; 0 if it cannot be read.
pub fn peak_rss_kib() -> u64 {
    status_kib("self", "VmHWM:").unwrap_or(0)
}

/// A size in KiB from `/proc/PID/status`, the line starting with `field`.
fn status_kib(pid: &str, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {field} in /proc/{pid}/status"))
}

/// Resets the peak RSS counter so each phase reports its own peak.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
