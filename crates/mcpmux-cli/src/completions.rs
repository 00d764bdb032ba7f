//! `mcpmux completions SHELL` and `mcpmux man`: the shell completion script and the roff man
//! page, both written from the same clap definitions the arguments are parsed with, so they
//! never fall behind a flag.

/// Prints the completion script of `shell` for `command` (install: see the README).
pub fn completions(shell: clap_complete::Shell, mut command: clap::Command) -> anyhow::Result<()> {
    let mut script = Vec::new();
    let name = command.get_name().to_string();
    clap_complete::generate(shell, &mut command, name, &mut script);
    crate::output::print_raw(&String::from_utf8_lossy(&script))
}

/// Prints the man page of `command` as roff (`mcpmux man | man -l -`).
pub fn man(command: clap::Command) -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page)?;
    crate::output::print_raw(&String::from_utf8_lossy(&page))
}
