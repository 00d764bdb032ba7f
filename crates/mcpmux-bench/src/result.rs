//! What a large tool result costs the hub in memory, and how long it takes: the test server's
//! `huge` tool answers one text block of N MiB over stdio, and the hub's peak resident set is
//! read before and during the call. Each measurement runs in a process of its own (`result-client`), so one peak
//! cannot hide another. Two ways a harness takes a result: whole (`max_result_bytes` above
//! the size) and cut to the default 100 KiB with the rest spilled to a file.
//!
//! `mcpmux-bench result [--mb N]... [--runs N] [--json]`

use std::process::Command;

use anyhow::{Context, bail};
use mcpmux::{Hub, HubOptions, ServerSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::programs::build_testserver;
use mcpmux_bench::memory::{peak_rss_kib, reset_peak_rss};

/// One measurement, as `result-client` prints it.
#[derive(Serialize, Deserialize, Clone, Copy, Default)]
struct Cost {
    /// The result's size in MiB.
    mb: f64,
    /// Resident set before the call (MiB).
    before_mb: f64,
    /// Peak resident set during the call (MiB).
    peak_mb: f64,
    /// Bytes of text the harness got back.
    text_bytes: usize,
    /// The call, from asking to the result in hand (ms): the server's making and writing
    /// of the text included.
    call_ms: f64,
}

impl Cost {
    /// Peak memory the result added, as a multiple of its size.
    fn ratio(&self) -> f64 {
        (self.peak_mb - self.before_mb) / self.mb
    }
}

/// `mcpmux-bench result`: the table, sizes × (whole, cut), medians of the runs.
pub(crate) fn main(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let mut sizes = Vec::new();
    let mut runs = 3;
    let mut as_json = false;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--mb" => sizes.push(args.next().context("--mb needs a size")?.parse::<f64>()?),
            "--runs" => runs = args.next().context("--runs needs a count")?.parse()?,
            "--json" => as_json = true,
            other => bail!("unknown flag {other}; flags: --mb N (repeatable) --runs N --json"),
        }
    }
    if sizes.is_empty() {
        sizes = vec![10.0, 50.0];
    }
    let server = build_testserver()?;
    let me = std::env::current_exe()?;
    let mut table = Vec::new();
    for &mb in &sizes {
        for whole in [true, false] {
            let mut costs = Vec::new();
            for _ in 0..runs.max(1) {
                let output = Command::new(&me)
                    .args(["result-client", &server.to_string_lossy(), &mb.to_string()])
                    .arg(if whole { "whole" } else { "cut" })
                    .output()?;
                if !output.status.success() {
                    bail!(
                        "result-client failed: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
                costs.push(serde_json::from_slice::<Cost>(&output.stdout)?);
            }
            let mut times: Vec<f64> = costs.iter().map(|c| c.call_ms).collect();
            times.sort_by(f64::total_cmp);
            costs.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
            let mut median = costs[costs.len() / 2];
            // Each figure's own median: the run with the median peak need not have the
            // median time.
            median.call_ms = times[times.len() / 2];
            table.push((whole, median));
        }
    }
    if as_json {
        let rows: Vec<_> = table
            .iter()
            .map(|(whole, c)| json!({"mb": c.mb, "whole": whole, "before_mb": c.before_mb, "peak_mb": c.peak_mb, "ratio": c.ratio(), "text_bytes": c.text_bytes, "call_ms": c.call_ms}))
            .collect();
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(());
    }
    println!(
        "{:>8} {:<30} {:>10} {:>10} {:>12} {:>8} {:>9}",
        "result", "taken", "RSS before", "peak", "text back", "cost", "call"
    );
    for (whole, c) in &table {
        let taken = if *whole {
            "whole (max_result_bytes above)"
        } else {
            "cut to 100 KiB, rest spilled"
        };
        println!(
            "{:>5} MiB {:<30} {:>7.1} MiB {:>6.1} MiB {:>12} {:>7.2}x {:>6.1} ms",
            c.mb,
            taken,
            c.before_mb,
            c.peak_mb,
            c.text_bytes,
            c.ratio(),
            c.call_ms
        );
    }
    Ok(())
}

/// `mcpmux-bench result-client SERVER MB whole|cut`: one call, its cost on stdout.
pub(crate) fn client_main(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let server = args.next().context("result-client needs the server path")?;
    let mb: f64 = args.next().context("result-client needs a size")?.parse()?;
    let whole = match args.next().as_deref() {
        Some("whole") => true,
        Some("cut") => false,
        _ => bail!("result-client needs `whole` or `cut`"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let cost = runtime.block_on(async {
        let mut spec = ServerSpec::stdio("big", &server, Vec::<String>::new());
        if whole {
            spec.options.max_result_bytes = (mb * 2.0 * 1024.0 * 1024.0) as usize;
        }
        let hub = Hub::start(vec![spec], HubOptions::ephemeral())?;
        hub.wait_ready().await?;
        // Everything a call touches, touched once before the measurement.
        hub.call("mcp__big__huge", json!({"mb": 0.01})).await?;
        let before_mb = mcpmux_bench::memory::rss_kib("self")? as f64 / 1024.0;
        reset_peak_rss();
        let start = std::time::Instant::now();
        let result = hub.call("mcp__big__huge", json!({"mb": mb})).await?;
        let call_ms = start.elapsed().as_secs_f64() * 1e3;
        let peak_mb = peak_rss_kib() as f64 / 1024.0;
        // Counted in place: joining the text would add a copy to the peak.
        let text_bytes: usize = result
            .content
            .iter()
            .map(|block| match block {
                mcpmux::Content::Text { text } => text.len(),
                _ => 0,
            })
            .sum();
        drop(result);
        hub.shutdown().await;
        anyhow::Ok(Cost {
            mb,
            before_mb,
            peak_mb,
            text_bytes,
            call_ms,
        })
    })?;
    println!("{}", serde_json::to_string(&cost)?);
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}
