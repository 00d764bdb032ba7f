//! A program on a real pseudo-terminal, through util-linux `script`: our stdin is typed at it,
//! its screen comes back on our stdout, and its exit code is passed through (`-e`; a death by
//! signal N as 128+N, as shells report it).

use std::path::Path;
use std::process::Command;

/// `script` running the shell `line` on a fresh pseudo-terminal. The shell is always
/// `/bin/sh`: `script` otherwise starts `$SHELL`, and shells differ on a Ctrl-C typed while
/// they wait (bash waits for its child, dash dies and takes the session with it).
pub fn script(line: &str) -> Command {
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-e", "-c", line, "/dev/null"])
        .env("SHELL", "/bin/sh");
    cmd
}

/// `script` running `program ARGS` as the terminal's only process: the shell is replaced by
/// it (`exec`), so a Ctrl-C typed reaches the program alone and its exit code is the run's.
pub fn on_pty(program: &Path, args: &[&str]) -> Command {
    let line = std::iter::once(format!("exec {}", shell_quote(&program.to_string_lossy())))
        .chain(args.iter().map(|arg| shell_quote(arg)))
        .collect::<Vec<_>>()
        .join(" ");
    script(&line)
}

/// `arg` as one word of a POSIX shell line.
pub fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_word_survives_the_shell_whatever_it_holds() {
        let odd = "it's $HOME; `x` \"y\" \\";
        let out = Command::new("/bin/sh")
            .args(["-c", &format!("printf %s {}", shell_quote(odd))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), odd);
    }
}
