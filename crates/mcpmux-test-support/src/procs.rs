//! Which processes are left, as /proc shows them: descendants, zombies, and waiting for a set
//! of pids to be gone.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use super::poll::eventually_blocking;

/// One process as /proc shows it.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub state: char,
    pub cmdline: String,
}

/// Every process on the machine.
pub fn processes() -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command (which may contain spaces) start after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .replace('\0', " ")
                    .trim()
                    .to_string()
            })
            .unwrap_or_default();
        out.push(Proc {
            pid,
            ppid: fields[1].parse().unwrap_or(0),
            pgid: fields[2].parse().unwrap_or(0),
            state: fields[0].chars().next().unwrap_or('?'),
            cmdline,
        });
    }
    out
}

/// Every descendant of `root` (children, grandchildren, …), zombies included.
pub fn descendants(root: i32) -> Vec<Proc> {
    let all = processes();
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in &all {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            out.push((*child).clone());
            stack.push(child.pid);
        }
    }
    out
}

/// Processes among `pids` that still exist (zombies count: they were not reaped).
pub fn still_alive(pids: &BTreeSet<i32>) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|p| pids.contains(&p.pid))
        .collect()
}

/// Waits up to `within` for `pids` to be gone; returns those left.
pub fn wait_gone(pids: &BTreeSet<i32>, within: Duration) -> Vec<Proc> {
    eventually_blocking(within, Duration::from_millis(20), || {
        still_alive(pids).is_empty().then_some(())
    })
    .map_or_else(|| still_alive(pids), |()| Vec::new())
}
