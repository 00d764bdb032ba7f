//! The resident set of a process, from `/proc` (Linux), and the CPU time it has used.

use anyhow::Context;

/// The resident set size now of process `pid` (`self` for this one), in KiB.
pub fn rss_kib(pid: &str) -> anyhow::Result<u64> {
    status_kib(pid, "VmRSS:")
}

/// Peak resident set size since the last reset, in KiB; 0 if it cannot be read.
pub fn peak_rss_kib() -> u64 {
    status_kib("self", "VmHWM:").unwrap_or(0)
}

/// Peak resident set size of process `pid` over its life, in KiB.
pub fn peak_rss_kib_of(pid: &str) -> anyhow::Result<u64> {
    status_kib(pid, "VmHWM:")
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

/// The CPU time (user and system) this process has used so far, in µs; 0 if it cannot be read.
pub fn cpu_time_us() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the struct it is given; it is read only when that succeeded.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return 0.0;
        }
        usage.assume_init()
    };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    us(usage.ru_utime) + us(usage.ru_stime)
}
