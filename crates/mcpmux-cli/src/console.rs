//! Questions to the person at the terminal that a server's request causes (an elicitation
//! form, a sampling approval): one at a time, answered line by line on stdin, a secret read
//! with echo off, and the first Ctrl-C while one is open ends that question, not mcpmux.
//!
//! Lines come from one reader thread that reads only when a question wants a line: a blocking
//! read cannot be abandoned, so a question ended by Ctrl-C leaves its read to the next question
//! rather than to a thread of its own that would swallow the next line typed.

use std::io::{BufRead, IsTerminal, Read};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::{Mutex, MutexGuard, Notify, mpsc};

use crate::output;

/// The longest answer line read; the rest of a longer line is left for the next read.
const MAX_LINE: u64 = 64 * 1024;

/// Whether a person can be asked: stdin and stderr are both a terminal.
pub fn available() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Whether a typed answer can be kept off the screen.
pub fn can_hide() -> bool {
    cfg!(unix)
}

/// Whether a question is open (a Ctrl-C now ends it rather than mcpmux).
static OPEN: AtomicBool = AtomicBool::new(false);
/// How many questions a Ctrl-C ended; each one ended is told by `ENDED`.
static ENDINGS: AtomicU64 = AtomicU64::new(0);
static ENDED: Notify = Notify::const_new();
/// One question at a time: two servers' forms would interleave their prompts.
static TURN: Mutex<()> = Mutex::const_new(());

/// Called on Ctrl-C: ends the open question and says so (`true`), or says there is none
/// (`false`: the Ctrl-C is mcpmux's to obey). A second Ctrl-C during the same question finds
/// it already ended.
pub fn interrupt_question() -> bool {
    if OPEN.swap(false, Ordering::SeqCst) {
        ENDINGS.fetch_add(1, Ordering::SeqCst);
        ENDED.notify_waiters();
        true
    } else {
        false
    }
}

/// The person's attention for one question, held while it lasts: the spinner and progress
/// line stay off the terminal meanwhile.
pub struct Question {
    _turn: MutexGuard<'static, ()>,
    ending: u64,
}

impl Question {
    /// Waits for the previous question to end, then opens this one.
    pub async fn open() -> Self {
        let turn = TURN.lock().await;
        let ending = ENDINGS.load(Ordering::SeqCst);
        OPEN.store(true, Ordering::SeqCst);
        output::set_prompting(true);
        output::eprint_control("\r\x1b[2K");
        Question {
            _turn: turn,
            ending,
        }
    }

    /// Writes `prompt` (escaped: it may carry a server's words) and reads one line, without
    /// its line end. `None` when the question was ended (Ctrl-C) or stdin closed (Ctrl-D).
    /// With `hidden`, echo is off before the prompt shows, so nothing typed after it is seen.
    pub async fn line(&self, prompt: &str, hidden: bool) -> Option<String> {
        let _echo = hidden.then(EchoOff::new);
        output::eprint_text(prompt);
        let line = tokio::select! {
            line = read_line() => line,
            () = self.ended() => None,
        };
        if hidden {
            // The Enter typed was not echoed either.
            output::eprint_control("\n");
        }
        line
    }

    /// Whether Ctrl-C ended this question.
    pub fn was_ended(&self) -> bool {
        ENDINGS.load(Ordering::SeqCst) != self.ending
    }

    async fn ended(&self) {
        loop {
            let ended = ENDED.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.was_ended() {
                return;
            }
            ended.await;
        }
    }
}

impl Drop for Question {
    fn drop(&mut self) {
        OPEN.store(false, Ordering::SeqCst);
        output::set_prompting(false);
    }
}

/// The reader thread's ends: a request for one line, and the lines read.
struct Reader {
    want: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    lines: Mutex<mpsc::UnboundedReceiver<Option<String>>>,
    /// A line was asked for and not yet taken (its question may have ended meanwhile).
    asked: AtomicBool,
}

fn reader() -> &'static Reader {
    static READER: OnceLock<Reader> = OnceLock::new();
    READER.get_or_init(|| {
        let (want, wanted) = std::sync::mpsc::channel::<()>();
        let (send, lines) = mpsc::unbounded_channel();
        // Parked on stdin until the process ends; it holds nothing that needs closing.
        let _ = std::thread::Builder::new()
            .name("mcpmux-stdin".into())
            .spawn(move || {
                while wanted.recv().is_ok() {
                    let mut line = String::new();
                    let read = std::io::stdin().lock().take(MAX_LINE).read_line(&mut line);
                    let line = match read {
                        Ok(0) | Err(_) => None,
                        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
                    };
                    if send.send(line).is_err() {
                        break;
                    }
                }
            });
        Reader {
            want: std::sync::Mutex::new(want),
            lines: Mutex::new(lines),
            asked: AtomicBool::new(false),
        }
    })
}

/// One line from stdin; `None` at its end. Cancel-safe: a line asked for by a dropped call is
/// the next call's.
async fn read_line() -> Option<String> {
    let reader = reader();
    let mut lines = reader.lines.lock().await;
    if !reader.asked.swap(true, Ordering::SeqCst) {
        let want = mcpmux::cli_support::sync::lock(&reader.want);
        if want.send(()).is_err() {
            return None;
        }
    }
    let line = lines.recv().await.flatten();
    reader.asked.store(false, Ordering::SeqCst);
    line
}

/// Terminal echo off while it lives (restored on drop: when the answer came, and when its
/// question was dropped by Ctrl-C or the program's end).
#[cfg(unix)]
struct EchoOff {
    saved: Option<libc::termios>,
}

#[cfg(unix)]
impl EchoOff {
    fn new() -> Self {
        // SAFETY: termios is plain data; tcgetattr fills it or fails, and only a filled one is
        // used. fd 0 is standard input, a terminal (`available` was checked by the caller).
        unsafe {
            let mut term: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut term) != 0 {
                return EchoOff { saved: None };
            }
            let saved = term;
            term.c_lflag &= !libc::ECHO;
            if libc::tcsetattr(0, libc::TCSANOW, &term) != 0 {
                return EchoOff { saved: None };
            }
            EchoOff { saved: Some(saved) }
        }
    }
}

#[cfg(unix)]
impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            // SAFETY: restores the settings tcgetattr returned for the same descriptor.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, saved);
            }
        }
    }
}

/// Without termios there is no echo to turn off here: [`can_hide`] says so, and a form with a
/// secret is declined.
#[cfg(not(unix))]
struct EchoOff;

#[cfg(not(unix))]
impl EchoOff {
    fn new() -> Self {
        EchoOff
    }
}
