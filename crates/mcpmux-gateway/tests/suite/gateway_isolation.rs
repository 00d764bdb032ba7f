//! What one client of a shared gateway may see of another, with two handshake-era sessions
//! over HTTP (rmcp's client) on the test server: a server's log raised during one session's
//! call reaches that session alone; one session's `logging/setLevel` leaves the other's stream
//! as it was, and the servers are asked again when a session ends; a call's progress reaches
//! its caller alone; and a scoped gateway serves nothing of a server outside its scope on any
//! route (read, prompt, completion, subscription, call), not only in its lists.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpmux_gateway::GatewayOptions;
use rmcp::model::{
    CallToolRequestParams, ClientConfig, GetPromptRequestParams, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use support::*;

/// How long a notification may take to arrive.
const WITHIN: Duration = Duration::from_secs(10);

/// What one downstream session heard: the log messages and progress steps sent to it.
#[derive(Clone, Default)]
struct Heard {
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Heard {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

impl Heard {
    /// The texts of the logs heard so far.
    fn texts(&self) -> Vec<String> {
        let logs = self.logs.lock().unwrap();
        logs.iter()
            .map(|l| l.data.as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Waits until a log with `text` was heard.
    async fn wait_for(&self, text: &str) {
        let heard = eventually(WITHIN, ms(5), || {
            self.texts().iter().any(|t| t == text).then_some(())
        })
        .await;
        assert!(
            heard.is_some(),
            "`{text}` never heard; heard {:?}",
            self.texts()
        );
    }
}

type Client = RunningService<RoleClient, Heard>;

/// One session on the gateway at `url`, and what it hears.
async fn session(url: &str) -> (Client, Heard) {
    let heard = Heard::default();
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let client = heard.clone().serve(transport).await.unwrap();
    (client, heard)
}

/// The test server's `log` tool: `text` logged at `level`; its answer ("logged", or "below
/// the level" the gateway asked of it).
async fn log(client: &Client, level: &str, text: &str) -> String {
    let arguments = json!({"level": level, "text": text});
    let params = CallToolRequestParams::new("mcp__t__log")
        .with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    let value = serde_json::to_value(&result).unwrap();
    value["content"][0]["text"].as_str().unwrap().to_string()
}

async fn set_level(client: &Client, level: LoggingLevel) {
    client
        .set_level(SetLevelRequestParams::new(level))
        .await
        .unwrap();
}

/// A gateway on one handshake-era test server `t`, its logs and notices passed on.
async fn shared() -> Served {
    Served::hosted(
        vec![fast_testserver("t", &["--era", "handshake"])],
        GatewayOptions::default(),
    )
    .await
}

#[tokio::test]
async fn a_log_raised_during_one_session_s_call_reaches_that_session_alone() {
    logs_reach_their_caller_alone(shared().await).await;
}

/// Two sessions of `served` (on server `t`) each hear their own calls' logs, never the
/// other's.
async fn logs_reach_their_caller_alone(served: Served) {
    let (a, heard_a) = session(&served.url).await;
    let (b, heard_b) = session(&served.url).await;
    assert_eq!(log(&a, "info", "A's secret").await, "logged");
    heard_a.wait_for("A's secret").await;
    let logger = heard_a.logs.lock().unwrap()[0].logger.clone();
    assert_eq!(logger.as_deref(), Some("t/testserver"));
    // B's own log comes after A's through the same gateway task and down the same stream:
    // had A's been sent to B, B would have heard it first.
    assert_eq!(log(&b, "info", "B's own").await, "logged");
    heard_b.wait_for("B's own").await;
    assert_eq!(heard_b.texts(), ["B's own"], "B heard another's log");
    assert_eq!(log(&a, "info", "A again").await, "logged");
    heard_a.wait_for("A again").await;
    assert_eq!(heard_a.texts(), ["A's secret", "A again"]);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn one_session_s_set_level_leaves_the_other_s_stream_as_it_was() {
    let served = shared().await;
    let (a, heard_a) = session(&served.url).await;
    let (b, heard_b) = session(&served.url).await;
    // B wants errors only; A set nothing and still gets the info its calls cause.
    set_level(&b, LoggingLevel::Error).await;
    assert_eq!(log(&a, "info", "A's info").await, "logged");
    heard_a.wait_for("A's info").await;
    // B's own info is cut for B alone; its error reaches it.
    log(&b, "info", "B's info").await;
    assert_eq!(log(&b, "error", "B's error").await, "logged");
    heard_b.wait_for("B's error").await;
    assert_eq!(heard_b.texts(), ["B's error"]);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn the_servers_are_asked_again_when_the_most_verbose_session_ends() {
    let served = shared().await;
    let (a, _heard_a) = session(&served.url).await;
    let (b, _heard_b) = session(&served.url).await;
    set_level(&a, LoggingLevel::Debug).await;
    set_level(&b, LoggingLevel::Error).await;
    // The server sends what A wants, the gateway cuts B's stream.
    assert_eq!(log(&b, "info", "for A's sake").await, "logged");
    a.cancel().await.unwrap();
    // A's session ends (its handler dropped a moment later): the server is asked for errors.
    let asked_again = eventually_async(WITHIN, ms(20), || async {
        (log(&b, "info", "after A").await == "below the level").then_some(())
    })
    .await;
    assert!(
        asked_again.is_some(),
        "the server still sends what a session gone wanted"
    );
    b.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn a_call_s_progress_reaches_only_the_calling_session() {
    let served = shared().await;
    let (a, heard_a) = session(&served.url).await;
    let (b, heard_b) = session(&served.url).await;
    let params = CallToolRequestParams::new("mcp__t__slow")
        .with_arguments(json!({"ms": 60, "steps": 3}).as_object().unwrap().clone());
    a.call_tool(params).await.unwrap();
    let steps = eventually(WITHIN, ms(5), || {
        let n = heard_a.progress.lock().unwrap().len();
        (n == 3).then_some(n)
    })
    .await;
    assert_eq!(steps, Some(3), "A's progress");
    // A round trip of B's after A's steps were sent.
    assert_eq!(log(&b, "info", "B here").await, "logged");
    heard_b.wait_for("B here").await;
    assert!(
        heard_b.progress.lock().unwrap().is_empty(),
        "B heard A's progress"
    );
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    served.stop().await;
}

/// The error or error result of a refused request, as text.
fn refused<T: std::fmt::Debug>(outcome: Result<T, rmcp::ServiceError>) -> String {
    match outcome {
        Err(error) => error.to_string(),
        Ok(answer) => panic!("served outside the scope: {answer:?}"),
    }
}

#[tokio::test]
async fn a_scoped_gateway_serves_nothing_of_a_server_outside_its_scope_on_any_route() {
    // The one server is declared for the `build` stage; the gateway serves `plan`.
    let mut spec = fast_testserver("t", &["--prompts"]);
    spec.options.stages = Some(vec!["build".into()]);
    let options = GatewayOptions::default().with_scope(Some("plan".parse().unwrap()));
    let served = Served::hosted(vec![spec], options).await;
    let (client, _heard) = session(&served.url).await;
    // Listed nowhere...
    assert!(client.list_all_resources().await.unwrap().is_empty());
    assert!(client.list_all_prompts().await.unwrap().is_empty());
    assert!(client.list_all_tools().await.unwrap().is_empty());
    // ...and served on no route either.
    let read = refused(
        client
            .read_resource(ReadResourceRequestParams::new("test://counter"))
            .await,
    );
    assert!(read.contains("no server in scope"), "{read}");
    refused(
        client
            .read_resource(ReadResourceRequestParams::new("test://item/4"))
            .await,
    );
    refused(
        client
            .get_prompt(GetPromptRequestParams::new("mcp__t__greet"))
            .await,
    );
    refused(
        client
            .complete_prompt_argument("mcp__t__greet", "name", "A", None)
            .await,
    );
    refused(
        client
            .complete_resource_argument("test://item/{id}", "id", "4", None)
            .await,
    );
    refused(
        client
            .subscribe(SubscribeRequestParams::new("test://counter"))
            .await,
    );
    let call = client
        .call_tool(
            CallToolRequestParams::new("mcp__t__echo")
                .with_arguments(json!({"text": "hi"}).as_object().unwrap().clone()),
        )
        .await;
    let refused_call = match call {
        Err(error) => error.to_string(),
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            serde_json::to_value(&result).unwrap().to_string()
        }
    };
    assert!(refused_call.contains("scope"), "{refused_call}");
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn a_prompt_listed_before_a_reload_hid_its_server_is_no_longer_served() {
    let mut spec = fast_testserver("t", &["--prompts"]);
    let options = GatewayOptions::default().with_scope(Some("plan".parse().unwrap()));
    let served = Served::hosted(vec![spec.clone()], options).await;
    let (client, _heard) = session(&served.url).await;
    let prompts = client.list_all_prompts().await.unwrap();
    assert!(
        prompts.iter().any(|p| p.name == "mcp__t__greet"),
        "{prompts:?}"
    );
    // The same server, now declared for the `build` stage only: the scope leaves it out.
    spec.options.stages = Some(vec!["build".into()]);
    let config = mcpmux::ConfigSet {
        servers: vec![spec],
        ..mcpmux::ConfigSet::default()
    };
    served
        .gateway
        .reconfigure(config, Vec::new())
        .await
        .unwrap();
    let greet = GetPromptRequestParams::new("mcp__t__greet")
        .with_arguments(json!({"name": "Ada"}).as_object().unwrap().clone());
    let got = refused(client.get_prompt(greet).await);
    assert!(got.contains("no prompt named"), "{got}");
    refused(
        client
            .complete_prompt_argument("mcp__t__greet", "name", "A", None)
            .await,
    );
    assert!(client.list_all_prompts().await.unwrap().is_empty());
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn a_log_raised_while_two_sessions_calls_are_in_flight_reaches_neither() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let spec = fast_testserver(
        "t",
        &["--era", "handshake", "--call-log", calls.to_str().unwrap()],
    );
    let served = Served::hosted(vec![spec], GatewayOptions::default()).await;
    let (a, _heard_a) = session(&served.url).await;
    let (b, heard_b) = session(&served.url).await;
    // A's call is in flight on the server (it logged its start) while B's call logs: the
    // log could be either's, and goes to neither.
    let params = CallToolRequestParams::new("mcp__t__slow").with_arguments(
        json!({"ms": 60_000, "steps": 1})
            .as_object()
            .unwrap()
            .clone(),
    );
    let peer = a.peer().clone();
    let slow = tokio::spawn(async move { peer.call_tool(params).await });
    wait_log(&calls, WITHIN, |l| l.iter().any(|e| e["tool"] == "slow")).await;
    assert_eq!(log(&b, "info", "B's, maybe").await, "logged");
    // A gives up (its call is cancelled upstream); B's next logs are B's alone again.
    slow.abort();
    let heard = eventually_async(WITHIN, ms(20), || async {
        log(&b, "info", "B alone").await;
        heard_b.texts().iter().any(|t| t == "B alone").then_some(())
    })
    .await;
    assert!(heard.is_some(), "B never heard its own log again");
    assert!(
        heard_b.texts().iter().all(|t| t == "B alone"),
        "{:?}",
        heard_b.texts()
    );
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn a_uri_a_hidden_server_lists_too_is_read_from_the_server_in_scope() {
    let mut hidden = fast_testserver("hidden", &[]);
    hidden.options.stages = Some(vec!["build".into()]);
    let open = fast_testserver("open", &[]);
    let options = GatewayOptions::default().with_scope(Some("plan".parse().unwrap()));
    let served = Served::hosted(vec![hidden, open], options).await;
    let (client, _heard) = session(&served.url).await;
    // Both list test://counter; the one in scope serves it, whichever the hub would pick.
    for _ in 0..3 {
        client
            .read_resource(ReadResourceRequestParams::new("test://counter"))
            .await
            .unwrap();
    }
    client
        .subscribe(SubscribeRequestParams::new("test://counter"))
        .await
        .unwrap();
    client.cancel().await.unwrap();
    served.stop().await;
}
