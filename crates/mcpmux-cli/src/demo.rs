//! The built-in demo server, run when nothing is configured (and nothing failed to load).

/// The demo server for a config with no server and no problem, and whether it was used.
pub fn with_demo(config: mcpmux::ConfigSet) -> (mcpmux::ConfigSet, bool) {
    if !config.servers.is_empty() || !config.problems.is_empty() {
        return (config, false);
    }
    let demo = mcpmux::ConfigSet {
        servers: vec![mcpmux_demo::demo_spec()],
        ..config
    };
    (demo, true)
}
