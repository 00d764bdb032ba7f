//! Tasks (SEP-2663) on one server: a task-augmented call (the call path of `call_path.rs`,
//! declaring the Tasks extension), and the requests about a task — `tasks/get`,
//! `tasks/update`, `tasks/cancel` — each sent to the session the task was made in, under the
//! server's call deadline and circuit breaker, its failure said as a call's is. A task lives in
//! its server's session: once that session has ended (the server exited, crashed or was
//! restarted), a request about the task says at once that it is lost, instead of asking a new
//! session that never knew it or waiting for a reconnect.
//!
//! The book of which session made which task is bounded and forgets a task when its server's
//! time to live for it has passed. Knows nothing of other servers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use rmcp::model::{
    CancelTaskParams, CancelTaskRequest, ClientRequest, ErrorCode, GetTaskParams, GetTaskRequest,
    ServerResult, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::breaker::Admission;
use super::exchange::{self, CancelOnDrop};
use super::task_wire;
use super::{Connection, Live};
use crate::defaults;
use crate::error::{Error, Result};
use crate::task::{Task, TaskState};
use crate::transport::ExitInfo;
use crate::transport::stdio::StderrTail;

/// The session a task was made in: what a request about it is sent on, and what tells that
/// the session has ended and why.
#[derive(Clone)]
struct Session {
    peer: Peer<RoleClient>,
    host: crate::host::Host,
    closed: CancellationToken,
    exit: Option<watch::Receiver<Option<ExitInfo>>>,
    stderr: Option<StderrTail>,
}

impl Session {
    fn of(live: &Live) -> Self {
        Session {
            peer: live.peer.clone(),
            host: live.host.clone(),
            closed: live.closed.clone(),
            exit: live.exit.clone(),
            stderr: live.stderr.clone(),
        }
    }

    /// Whether the session is over: closed by the supervisor, or its process has exited.
    fn ended(&self) -> bool {
        self.closed.is_cancelled()
            || self
                .exit
                .as_ref()
                .is_some_and(|exit| exit.borrow().is_some())
    }

    /// Whether the session is over, or ends within [`ENDING_WAIT`]: a request that failed on
    /// a broken pipe may see the failure before the process's exit is known.
    async fn ends_soon(&self) -> bool {
        if self.ended() {
            return true;
        }
        let exited = async {
            match &self.exit {
                Some(exit) => {
                    let _ = exit.clone().wait_for(Option::is_some).await;
                }
                None => std::future::pending().await,
            }
        };
        let ending = async {
            tokio::select! {
                () = self.closed.cancelled() => {}
                () = exited => {}
            }
        };
        tokio::time::timeout(ENDING_WAIT, ending).await.is_ok()
    }
}

/// How long a request that failed in the transport waits to learn whether its session ended.
const ENDING_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// One remembered task.
struct Entry {
    session: Session,
    /// The tool it runs (the server's own name): its result is cut under it.
    tool: String,
    /// When it is forgotten: its time to live from the last answer about it, at most
    /// [`defaults::TASK_KEEP_MAX`].
    until: Instant,
}

/// The tasks a server made for this hub, by id: which session each lives in.
#[derive(Default)]
pub(crate) struct Book(Mutex<HashMap<String, Entry>>);

impl Book {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        crate::sync::lock(&self.0)
    }

    /// Remembers `task`, made by calling `tool` in the session of `live`.
    pub(super) fn record(&self, task: &Task, tool: &str, live: &Live) {
        let now = Instant::now();
        let mut entries = self.lock();
        if entries.len() >= defaults::MAX_REMEMBERED_TASKS {
            entries.retain(|_, entry| entry.until > now);
        }
        if entries.len() >= defaults::MAX_REMEMBERED_TASKS {
            let first = entries
                .iter()
                .min_by_key(|(_, entry)| entry.until)
                .map(|(id, _)| id.clone());
            if let Some(id) = first {
                entries.remove(&id);
            }
        }
        entries.insert(
            task.id.clone(),
            Entry {
                session: Session::of(live),
                tool: tool.to_string(),
                until: now + keep(task),
            },
        );
    }

    /// The session `id` lives in and the tool it runs, while it is remembered.
    fn find(&self, id: &str) -> Option<(Session, String)> {
        let now = Instant::now();
        self.lock()
            .get(id)
            .filter(|entry| entry.until > now)
            .map(|entry| (entry.session.clone(), entry.tool.clone()))
    }

    /// The server answered about `task`: its time to live runs from now.
    fn refresh(&self, task: &Task) {
        if let Some(entry) = self.lock().get_mut(&task.id) {
            entry.until = Instant::now() + keep(task);
        }
    }

    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// How long a task is remembered: its time to live, at most [`defaults::TASK_KEEP_MAX`].
fn keep(task: &Task) -> std::time::Duration {
    task.ttl
        .unwrap_or(defaults::TASK_KEEP_MAX)
        .min(defaults::TASK_KEEP_MAX)
}

impl Connection {
    /// Whether the live session's server declares the Tasks extension.
    pub(crate) fn offers_tasks(&self) -> bool {
        self.peer().is_some_and(|peer| task_wire::offered_by(&peer))
    }

    /// `tasks/get`: the task's state, and the tool it runs when this hub made it.
    pub(crate) async fn get_task(&self, id: &str) -> Result<(TaskState, Option<String>)> {
        let request = ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(id)));
        let (answer, tool) = self.task_request(id, "tasks/get", request).await?;
        match answer {
            ServerResult::GetTaskResult(answer) => {
                let state = task_wire::state_of(&self.spec.name, id, answer)?;
                self.tasks.refresh(&state.task);
                Ok((state, tool))
            }
            other => Err(self.unexpected("tasks/get", &other)),
        }
    }

    /// `tasks/update`: answers to what the task asked, by the keys it asked them under.
    pub(crate) async fn update_task(&self, id: &str, responses: Map<String, Value>) -> Result<()> {
        let params = UpdateTaskParams::new(id, responses.into_iter().collect());
        let request = ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(params));
        let (answer, _) = self.task_request(id, "tasks/update", request).await?;
        self.acknowledged("tasks/update", &answer)
    }

    /// `tasks/cancel`: asks the server to stop the task (it says so in the task's status).
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<()> {
        let request =
            ClientRequest::CancelTaskRequest(CancelTaskRequest::new(CancelTaskParams::new(id)));
        let (answer, _) = self.task_request(id, "tasks/cancel", request).await?;
        self.acknowledged("tasks/cancel", &answer)
    }

    fn acknowledged(&self, what: &str, answer: &ServerResult) -> Result<()> {
        match answer {
            ServerResult::TaskAckResult(_) | ServerResult::EmptyResult(_) => Ok(()),
            other => Err(self.unexpected(what, other)),
        }
    }

    fn unexpected(&self, what: &str, answer: &ServerResult) -> Error {
        let kind = serde_json::to_value(answer)
            .ok()
            .and_then(|value| {
                value
                    .as_object()
                    .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
            })
            .unwrap_or_default();
        Error::Protocol {
            server: self.spec.name.clone(),
            message: format!("answered {what} with something else ({kind})"),
            source: None,
        }
    }

    /// Sends one request about task `id`, declaring the extension, on the session the task
    /// lives in (the live one for a task this hub did not make), within the call deadline.
    async fn task_request(
        &self,
        id: &str,
        method: &str,
        request: ClientRequest,
    ) -> Result<(ServerResult, Option<String>)> {
        let what = format!("{method} `{}`", task_wire::cut(id));
        let (session, tool) = match self.tasks.find(id) {
            Some((session, tool)) => (session, Some(tool)),
            None => {
                let live = self.live_part(&what, Connection::live).await?;
                (Session::of(&live), None)
            }
        };
        if session.ended() {
            return Err(self.lost(id, &session).await);
        }
        if let Admission::Open { .. } = self.breaker.admit() {
            return Err(Error::CircuitOpen {
                server: self.spec.name.clone(),
                message: self.breaker.describe(),
            });
        }
        let mut options = PeerRequestOptions::no_options();
        options.meta = Some(task_wire::declaring(&session.host));
        let handle = match session
            .peer
            .send_cancellable_request(request, options)
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.failed(id, &what, &session, e).await),
        };
        let mut cancel_guard = CancelOnDrop {
            peer: Some(handle.peer.clone()),
            id: handle.id.clone(),
        };
        let timeout = self.spec.call_timeout;
        let answer = tokio::select! {
            answer = tokio::time::timeout(timeout, handle.rx) => answer,
            () = session.closed.cancelled() => {
                cancel_guard.peer = None;
                return Err(self.lost(id, &session).await);
            }
        };
        if answer.is_ok() {
            // Answered, or the session is gone: nothing left to cancel.
            cancel_guard.peer = None;
        }
        drop(cancel_guard);
        let result = match answer {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(e))) => Err(self.failed(id, &what, &session, e).await),
            Ok(Err(_)) => Err(self
                .failed(id, &what, &session, ServiceError::TransportClosed)
                .await),
            Err(_) => Err(Error::Timeout {
                server: self.spec.name.clone(),
                what,
                after: timeout,
            }),
        };
        match &result {
            Ok(_) => self.breaker.record_success(),
            Err(error) => self.count(error),
        }
        result.map(|answer| (answer, tool))
    }

    /// A request about task `id` failed: the session ended under it (the task is lost), or
    /// the server's own error (an id it does not know is forgotten here too), or the
    /// transport's, said as for any request.
    async fn failed(&self, id: &str, what: &str, session: &Session, e: ServiceError) -> Error {
        let transport = matches!(
            e,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        );
        if transport && session.ends_soon().await {
            return self.lost(id, session).await;
        }
        match e {
            // A failed send on a live session (an HTTP server gone): the transport's own words.
            ServiceError::TransportSend(error) => Error::ConnectionLost {
                server: self.spec.name.clone(),
                what: what.to_string(),
                reason: exchange::innermost_message(&error),
                stderr_tail: Vec::new(),
                source: crate::error::cause(error),
            },
            e => {
                if let ServiceError::McpError(data) = &e
                    && data.code == ErrorCode::INVALID_PARAMS
                {
                    self.tasks.forget(id);
                }
                super::exchange::service_error(&self.spec.name, what, e)
            }
        }
    }

    async fn lost(&self, id: &str, session: &Session) -> Error {
        self.tasks.forget(id);
        let (reason, stderr_tail) =
            exchange::ended(session.exit.as_ref(), session.stderr.as_ref()).await;
        Error::TaskLost {
            server: self.spec.name.clone(),
            task: task_wire::cut(id),
            reason,
            stderr_tail,
            source: None,
        }
    }

    /// A failure that says the server is unwell counts against its breaker, as a call's does;
    /// the server's own error about a task (an unknown id, a bad answer) is the asker's.
    fn count(&self, error: &Error) {
        let unwell = matches!(
            error,
            Error::Timeout { .. } | Error::ConnectionLost { .. } | Error::Protocol { .. }
        );
        if unwell && self.breaker.record_failure(&error.to_string()) {
            let described = self.breaker.describe();
            tracing::warn!(server = %self.spec.name, "circuit breaker opened: {described}");
            crate::telemetry::lifecycle::mark(
                &self.spec.name,
                crate::telemetry::lifecycle::Moment::BreakerOpen,
                Some(&described),
            );
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::task::TaskStatus;

    fn task(ttl: Option<Duration>) -> Task {
        Task {
            server: "s".into(),
            id: "t".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: String::new(),
            last_updated_at: String::new(),
            ttl,
            poll_interval: None,
        }
    }

    #[test]
    fn a_task_is_kept_for_its_ttl_but_never_past_a_day() {
        assert_eq!(
            keep(&task(Some(Duration::from_secs(60)))),
            Duration::from_secs(60)
        );
        assert_eq!(keep(&task(None)), defaults::TASK_KEEP_MAX);
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(keep(&task(Some(year))), defaults::TASK_KEEP_MAX);
    }

    #[test]
    fn an_unknown_task_is_not_in_the_book() {
        assert!(Book::default().find("nope").is_none());
    }
}
