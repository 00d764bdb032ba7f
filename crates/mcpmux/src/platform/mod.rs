//! The seams between mcpmux and the operating system, one file per concern, each with its Unix
//! and its Windows side (macOS is Unix here; Linux-only extras are marked `target_os = "linux"`):
//! `dirs` (home, settings and cache folders, and desktop applications' settings), `process` (a child's process group or job object, and killing all it started), `fs` (files
//! and folders only the person may read, and the mode and owner checks built on Unix modes),
//! `program` (the file a server's command names: Windows' `.cmd` shims such as `npx`).
//! Everything else in the library is platform-free. Knows nothing of servers or config.

pub(crate) mod dirs;
pub(crate) mod fs;
pub(crate) mod process;
pub(crate) mod program;
