//! A child and everything it starts, as one unit we can stop: on Unix a process group of its
//! own (`setpgid`, then `killpg`), on Linux also `PR_SET_PDEATHSIG` so the kernel kills it when
//! we die uncleanly; on Windows a job object that kills its processes when its last handle
//! closes (so also when we die). The same split `process-wrap` makes; ours is the few calls
//! the stdio transport and the headers helper need, on the tokio `Command` they already build.

use tokio::process::{Child, Command};

/// The shell a command line is run by, and its flag for "run this line": `sh -c` on Unix,
/// `cmd /C` on Windows (where `sh` is not there to be found).
pub(crate) const SHELL: (&str, &str) = if cfg!(windows) {
    ("cmd", "/C")
} else {
    ("sh", "-c")
};

/// Puts the child about to be spawned from `cmd` in a group of its own: signals reach `npx`
/// and the `node` it starts, and a Ctrl-C in our terminal is ours to handle, not delivered
/// straight to every server.
pub(crate) fn isolate(cmd: &mut Command) {
    #[cfg(unix)]
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: the closure runs between fork and exec and only calls the async-signal-safe
    // prctl; it allocates nothing.
    unsafe {
        // If we die without cleaning up (SIGKILL, abort), the kernel kills the child too.
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW};
        // No console window per server, and no share of our console's Ctrl-C.
        cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
    }
}

/// What a spawned child started, to be stopped as one.
#[derive(Debug)]
pub(crate) struct Group {
    #[cfg(unix)]
    pgid: i32,
    #[cfg(windows)]
    job: Option<windows::Job>,
}

impl Group {
    /// The group of a child spawned from a command [`isolate`] prepared; an empty group (one
    /// whose signals go nowhere) when the child has already been reaped.
    pub(crate) fn of(child: &Child) -> Group {
        #[cfg(unix)]
        {
            Group {
                pgid: child
                    .id()
                    .and_then(|id| i32::try_from(id).ok())
                    .unwrap_or(0),
            }
        }
        #[cfg(windows)]
        {
            Group {
                job: windows::Job::holding(child),
            }
        }
    }

    /// Asks the group to end: SIGTERM on Unix. Windows has no such request for a process
    /// without a window, so there it ends the job at once.
    pub(crate) fn terminate(&self) {
        #[cfg(unix)]
        self.signal(libc::SIGTERM);
        #[cfg(windows)]
        self.kill();
    }

    /// Ends every process of the group at once (SIGKILL; `TerminateJobObject`).
    pub(crate) fn kill(&self) {
        #[cfg(unix)]
        self.signal(libc::SIGKILL);
        #[cfg(windows)]
        if let Some(job) = &self.job {
            job.terminate();
        }
    }

    #[cfg(unix)]
    fn signal(&self, signal: i32) {
        if self.pgid > 0 {
            // SAFETY: killpg has no memory-safety preconditions; a stale group id yields ESRCH.
            unsafe {
                libc::killpg(self.pgid, signal);
            }
        }
    }
}

/// The signal that ended a process, where processes end by signals (Unix).
pub(crate) fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

#[cfg(windows)]
mod windows {
    //! A job object owning one child and all it starts.

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject,
    };

    /// A job handle, closed (killing what is left in it) on drop.
    #[derive(Debug)]
    pub(super) struct Job(HANDLE);

    // SAFETY: a job handle may be used and closed from any thread.
    unsafe impl Send for Job {}
    // SAFETY: the calls made through a shared reference (TerminateJobObject) are thread-safe.
    unsafe impl Sync for Job {}

    impl Job {
        /// A new kill-on-close job holding `child`; `None` when the child is gone or the
        /// system refuses (then only the child itself is killed, through tokio).
        ///
        /// The child is assigned after it started: what it spawns in that first instant is
        /// outside the job. (`process-wrap` closes the gap by starting the child suspended.)
        pub(super) fn holding(child: &tokio::process::Child) -> Option<Job> {
            let process = child.raw_handle()?;
            // SAFETY: plain Win32 calls on a handle we own; the limit struct outlives the call.
            unsafe {
                let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
                if job.is_null() {
                    return None;
                }
                let job = Job(job);
                let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
                limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
                let size = u32::try_from(std::mem::size_of_val(&limits)).ok()?;
                if SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    std::ptr::from_ref(&limits).cast(),
                    size,
                ) == 0
                    || AssignProcessToJobObject(job.0, process as HANDLE) == 0
                {
                    return None;
                }
                Some(job)
            }
        }

        pub(super) fn terminate(&self) {
            // SAFETY: our own open handle; a job already empty is not an error worth a word.
            unsafe {
                TerminateJobObject(self.0, 1);
            }
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: closing the handle we opened, once.
            unsafe {
                CloseHandle(self.0);
            }
        }
    }
}
