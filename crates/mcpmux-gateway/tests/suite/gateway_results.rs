//! What a tool call's result is to a client of the gateway: the upstream server's, unchanged.
//! A result with a block of every kind (text, image, audio, embedded text and blob resources,
//! a resource link), structured content, `_meta` and `isError` reaches an rmcp client over
//! HTTP as the test server sent it, from a 2026-07-28 server and from a handshake-era one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux_gateway::GatewayOptions;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use support::*;

/// What the test server's `kinds` tool answers (`mcpmux-testserver`'s `every_kind`).
fn every_kind() -> Value {
    json!({
        "content": [
            {"type": "text", "text": "every kind"},
            {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://text", "mimeType": "text/plain", "text": "embedded"}},
            {"type": "resource", "resource": {"uri": "test://blob", "mimeType": "application/octet-stream", "blob": "AAEC"}},
            {"type": "resource_link", "uri": "test://link", "name": "link", "description": "a linked resource", "mimeType": "text/plain"}
        ],
        "structuredContent": {"kinds": 6},
        "isError": true,
        "_meta": {"test/trace": "kinds-1"}
    })
}

#[tokio::test]
async fn a_result_of_every_content_kind_reaches_the_client_unchanged() {
    let served = Served::start(
        vec![
            fast_testserver("t", &[]),
            fast_testserver("h", &["--era", "handshake"]),
        ],
        GatewayOptions::default(),
        |_| {},
    )
    .await;
    let transport = StreamableHttpClientTransport::from_uri(served.url.clone());
    let client = ().serve(transport).await.unwrap();
    for tool in ["mcp__t__kinds", "mcp__h__kinds"] {
        let result = client
            .call_tool(CallToolRequestParams::new(tool))
            .await
            .unwrap();
        let mut got = serde_json::to_value(&result).unwrap();
        // The 2026-07-28 discriminator the gateway's rmcp adds for a client of that era.
        got.as_object_mut().unwrap().remove("resultType");
        assert_eq!(got, every_kind(), "{tool}");
    }
    client.cancel().await.unwrap();
    served.stop().await;
}
