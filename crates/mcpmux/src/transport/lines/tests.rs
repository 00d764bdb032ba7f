#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, duplex};

use super::*;

/// A transport over two in-memory pipes, and the server's ends of them.
fn pair(
    max_line: usize,
) -> (
    LineTransport<DuplexStream, DuplexStream>,
    DuplexStream,
    DuplexStream,
) {
    let (server_out, client_in) = duplex(1 << 20);
    let (client_out, server_in) = duplex(1 << 20);
    (
        LineTransport::new(client_in, client_out, "t", max_line),
        server_out,
        server_in,
    )
}

fn response_id(message: &ServerJsonRpcMessage) -> Option<String> {
    let value = serde_json::to_value(message).unwrap();
    value.get("id").map(|id| id.to_string())
}

#[tokio::test]
async fn only_json_rpc_lines_are_read_and_a_last_line_without_newline_is_dropped() {
    let (mut transport, mut server_out, _server_in) = pair(1 << 20);
    server_out
        .write_all(
            b"banner text\n{\"hello\":1}\n\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\n  \
              {\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":3,",
        )
        .await
        .unwrap();
    drop(server_out);
    let first = transport.receive().await.unwrap();
    let second = transport.receive().await.unwrap();
    assert_eq!(response_id(&first).as_deref(), Some("1"));
    assert_eq!(response_id(&second).as_deref(), Some("2"));
    assert!(transport.receive().await.is_none());
}

#[tokio::test]
async fn a_message_written_a_byte_at_a_time_is_read_whole() {
    let (mut transport, mut server_out, _server_in) = pair(1 << 20);
    let text = "x".repeat(100_000);
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n"
    );
    let writer = tokio::spawn(async move {
        for piece in line.as_bytes().chunks(777) {
            server_out.write_all(piece).await.unwrap();
            tokio::task::yield_now().await;
        }
        server_out
    });
    let message = transport.receive().await.unwrap();
    assert_eq!(response_id(&message).as_deref(), Some("9"));
    assert!(serde_json::to_string(&message).unwrap().contains(&text));
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn small_messages_are_read_into_a_small_buffer_and_a_full_read_grows_it() {
    let (mut transport, mut server_out, _server_in) = pair(1 << 20);
    server_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
        .await
        .unwrap();
    assert_eq!(
        response_id(&transport.receive().await.unwrap()).as_deref(),
        Some("1")
    );
    assert_eq!(transport.reader.chunk.len(), FIRST_READ);
    // A message larger than the first buffer, written at once: the read fills the buffer.
    let text = "y".repeat(3 * FIRST_READ);
    let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"t\":\"{text}\"}}}}\n");
    server_out.write_all(line.as_bytes()).await.unwrap();
    let message = transport.receive().await.unwrap();
    assert_eq!(response_id(&message).as_deref(), Some("2"));
    assert!(serde_json::to_string(&message).unwrap().contains(&text));
    assert_eq!(transport.reader.chunk.len(), READ_CHUNK);
}

/// The error answer `message` is, as JSON: its id and its text.
fn error_of(message: &ServerJsonRpcMessage) -> (serde_json::Value, String) {
    let value = serde_json::to_value(message).unwrap();
    let text = value["error"]["message"].as_str().unwrap_or_default();
    (value["id"].clone(), text.to_string())
}

#[tokio::test]
async fn a_line_over_the_limit_fails_the_request_its_head_names_and_the_next_one_is_read() {
    let (mut transport, mut server_out, _server_in) = pair(1000);
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"pad\":\"{}\"}}}}\n",
        "y".repeat(5000)
    );
    // Whole in one write, and across several, so the line is cut while it is being
    // assembled too.
    server_out.write_all(long.as_bytes()).await.unwrap();
    for piece in long.as_bytes().chunks(300) {
        server_out.write_all(piece).await.unwrap();
    }
    server_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n")
        .await
        .unwrap();
    for _ in 0..2 {
        let (id, text) = error_of(&transport.receive().await.unwrap());
        assert_eq!(id, 1);
        assert!(text.starts_with("answer over 1000 bytes: "), "{text}");
    }
    let message = transport.receive().await.unwrap();
    assert_eq!(response_id(&message).as_deref(), Some("2"));
}

#[tokio::test]
async fn a_line_over_the_limit_that_names_its_id_last_fails_that_request() {
    let (mut transport, mut server_out, _server_in) = pair(1000);
    let long = format!(
        "{{\"result\":{{\"pad\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":\"late\"}}\n",
        "y".repeat(50_000)
    );
    for piece in long.as_bytes().chunks(777) {
        server_out.write_all(piece).await.unwrap();
    }
    let (id, text) = error_of(&transport.receive().await.unwrap());
    assert_eq!(id, "late");
    assert!(text.starts_with("answer over 1000 bytes: "), "{text}");
}

#[tokio::test]
async fn a_line_over_the_limit_that_names_no_id_fails_every_request_in_flight() {
    let (mut transport, mut server_out, _server_in) = pair(1000);
    // Two of rmcp's requests (one answered already), one it gave up on, and a direct call.
    let request = |id: i64, method: &str| -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": {"name": "x"}
        }))
        .unwrap()
    };
    transport.send(request(1, "tools/list")).await.unwrap();
    transport.send(request(2, "tools/call")).await.unwrap();
    transport.send(request(3, "tools/list")).await.unwrap();
    transport.send(request(4, "prompts/list")).await.unwrap();
    let cancelled: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}
    }))
    .unwrap();
    transport.send(cancelled).await.unwrap();
    let direct = transport.direct();
    let call = {
        let mut params = rmcp::model::CallToolRequestParams::new("echo");
        params.arguments = serde_json::json!({"text": "d"}).as_object().cloned();
        let request =
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        direct.call(direct.ticket(), request, None).await.unwrap()
    };
    let padded = format!(
        "{}{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"tools\":[]}}}}\n",
        " ".repeat(20_000)
    );
    server_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}\n")
        .await
        .unwrap();
    server_out.write_all(padded.as_bytes()).await.unwrap();
    assert_eq!(
        response_id(&transport.receive().await.unwrap()).as_deref(),
        Some("3")
    );
    let mut failed = Vec::new();
    for _ in 0..2 {
        let (id, text) = error_of(&transport.receive().await.unwrap());
        assert!(text.starts_with("answer over 1000 bytes: "), "{text}");
        failed.push(id.as_i64().unwrap());
    }
    failed.sort_unstable();
    assert_eq!(failed, [1, 2], "the ones in flight, and only those");
    // The next receive hands the direct call its failure, then waits for more lines.
    assert!(futures::FutureExt::now_or_never(transport.receive()).is_none());
    match call.await.unwrap() {
        Err(rmcp::service::ServiceError::McpError(error)) => {
            assert!(
                error.message.starts_with("answer over 1000 bytes: "),
                "{error:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_message_of_the_servers_over_the_limit_fails_nothing() {
    let (mut transport, mut server_out, _server_in) = pair(1000);
    let list: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list"
    }))
    .unwrap();
    transport.send(list).await.unwrap();
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "s".repeat(5000)
    );
    server_out.write_all(request.as_bytes()).await.unwrap();
    server_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n")
        .await
        .unwrap();
    let message = transport.receive().await.unwrap();
    assert!(
        matches!(message, ServerJsonRpcMessage::Response(_)),
        "{message:?}"
    );
}

#[tokio::test]
async fn a_response_that_is_not_mcp_fails_its_request_at_once() {
    let (mut transport, mut server_out, _server_in) = pair(1 << 20);
    // Neither `result` nor `error`: JSON, but no MCP response.
    server_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"abc\"}\n")
        .await
        .unwrap();
    let message = transport.receive().await.unwrap();
    let value = serde_json::to_value(&message).unwrap();
    assert_eq!(value["id"], "abc", "{value}");
    assert_eq!(value["error"]["code"], PARSE_ERROR, "{value}");
    let text = value["error"]["message"].as_str().unwrap();
    assert!(text.contains("does not read as MCP"), "{text}");
}

#[tokio::test]
async fn a_response_nested_too_deep_fails_its_request() {
    let (mut transport, mut server_out, _server_in) = pair(1 << 20);
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{{\"x\":{}{}}}}}\n",
        "[".repeat(300),
        "]".repeat(300)
    );
    server_out.write_all(deep.as_bytes()).await.unwrap();
    let value = serde_json::to_value(transport.receive().await.unwrap()).unwrap();
    assert_eq!(value["id"], 4, "{value}");
    assert!(value.get("error").is_some(), "{value}");
}

#[tokio::test]
async fn concurrent_sends_arrive_whole_each_on_its_line() {
    let (transport, _server_out, server_in) = pair(1 << 20);
    let transport = Arc::new(tokio::sync::Mutex::new(transport));
    let mut sends = Vec::new();
    for i in 0..500 {
        let message: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": i, "progress": i, "message": "z".repeat(i % 97)}
        }))
        .unwrap();
        let send = transport.lock().await.send(message);
        sends.push(tokio::spawn(send));
    }
    for send in sends {
        send.await.unwrap().unwrap();
    }
    let mut lines = BufReader::new(server_in).lines();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..500 {
        let line = lines.next_line().await.unwrap().unwrap();
        let message: ClientJsonRpcMessage = serde_json::from_str(&line).unwrap();
        let ClientJsonRpcMessage::Notification(notification) = message else {
            panic!("{line}");
        };
        let ClientNotification::ProgressNotification(progress) = notification.notification else {
            panic!("{line}");
        };
        seen.insert(progress.params.progress as u64);
    }
    assert_eq!(seen.len(), 500);
}

#[tokio::test]
async fn a_server_that_stops_reading_makes_senders_wait_instead_of_buffering_without_end() {
    // A pipe that holds 1 KiB, never read.
    let (client_in, _server_out) = duplex(1024);
    let (client_out, _server_in) = duplex(1024);
    let mut transport = LineTransport::new(client_in, client_out, "t", 1 << 20);
    let big = |n: usize| -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "w".repeat(n)}
        }))
        .unwrap()
    };
    // The first send holds the writer, blocked on the full pipe; the queue fills behind it.
    let first = tokio::spawn(transport.send(big(4096)));
    tokio::task::yield_now().await;
    let queued = transport.send(big(HIGH_WATER));
    tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .unwrap()
        .unwrap();
    let over = transport.send(big(1024));
    assert!(
        tokio::time::timeout(Duration::from_millis(200), over)
            .await
            .is_err(),
        "a send past the high-water mark completed while nothing drained"
    );
    first.abort();
}

#[tokio::test]
async fn close_writes_what_is_queued_and_ends_the_peer_s_input() {
    let (mut transport, _server_out, server_in) = pair(1 << 20);
    let note: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "method": "notifications/initialized"
    }))
    .unwrap();
    transport.send(note).await.unwrap();
    transport.close().await.unwrap();
    let mut lines = BufReader::new(server_in).lines();
    assert!(
        lines
            .next_line()
            .await
            .unwrap()
            .unwrap()
            .contains("initialized")
    );
    assert!(
        lines.next_line().await.unwrap().is_none(),
        "no end of input"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_queue_is_full_arrive_in_the_order_sent() {
    let (mut transport, _server_out, server_in) = pair(1 << 20);
    let note = |i: usize, pad: usize| -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": i, "progress": i, "message": "p".repeat(pad)}
        }))
        .unwrap()
    };
    // The first message fills the queue past its high-water mark; the rest wait in line.
    let mut sends = vec![tokio::spawn(transport.send(note(0, HIGH_WATER + 1)))];
    for i in 1..200 {
        sends.push(tokio::spawn(transport.send(note(i, 10))));
    }
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(server_in).lines();
        let mut order = Vec::new();
        while order.len() < 200 {
            let line = lines.next_line().await.unwrap().unwrap();
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            order.push(value["params"]["progress"].as_f64().unwrap() as u64);
        }
        order
    });
    for send in sends {
        send.await.unwrap().unwrap();
    }
    let order = reader.await.unwrap();
    assert_eq!(order, (0..200).collect::<Vec<u64>>());
}

#[tokio::test]
async fn an_answer_to_a_tool_call_is_read_as_its_result_and_other_answers_are_not() {
    let (mut transport, mut server_out, _server_in) = pair(64 << 20);
    let call: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "huge", "arguments": {}}
    }))
    .unwrap();
    transport.send(call).await.unwrap();
    let text = "q".repeat(200 * 1024);
    let answer = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"isError\":false}}}}\n"
    );
    server_out.write_all(answer.as_bytes()).await.unwrap();
    let ServerJsonRpcMessage::Response(response) = transport.receive().await.unwrap() else {
        panic!("not a response");
    };
    let ServerResult::CallToolResult(result) = response.result else {
        panic!("not read as a tool result");
    };
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(
        value["content"][0]["text"].as_str().unwrap().len(),
        text.len()
    );

    // Id 8 was no tools/call: a large tool list stays a tool list.
    let tools: Vec<serde_json::Value> = (0..2000)
        .map(|i| serde_json::json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}, "description": "d".repeat(40)}))
        .collect();
    let listed = serde_json::json!({"jsonrpc": "2.0", "id": 8, "result": {"tools": tools}});
    server_out
        .write_all(format!("{listed}\n").as_bytes())
        .await
        .unwrap();
    let ServerJsonRpcMessage::Response(response) = transport.receive().await.unwrap() else {
        panic!("not a response");
    };
    assert!(
        matches!(response.result, ServerResult::ListToolsResult(_)),
        "{:?}",
        serde_json::to_string(&response.result).unwrap().get(..80)
    );
}
