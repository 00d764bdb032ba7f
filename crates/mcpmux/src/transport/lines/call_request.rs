//! A `tools/call` request written straight to its line. rmcp writes a request's `params` by
//! first turning them into a `serde_json::Value` (to merge the `_meta` it keeps beside them),
//! then writing that: the arguments are copied into a tree of maps, written, and freed, about
//! a quarter of the instructions of a whole call through the hub. Here the params are written
//! by their own serializer, with the same `_meta` put in front. Anything else, or a call whose
//! `_meta` would need merging, goes rmcp's way.

use rmcp::model::{ClientRequest, JsonRpcRequest, MetaObject, RequestMetaObject};

/// The line for `request`, if it is a `tools/call` this can write; `None` for rmcp's way.
pub(super) fn encode(request: &JsonRpcRequest<ClientRequest>) -> Option<Vec<u8>> {
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    // Two `_meta`s to merge (one in the params, or a legacy one beside the typed one): rmcp's
    // rules, left to rmcp.
    if call.params.meta.is_some() || call.extensions.get::<MetaObject>().is_some() {
        return None;
    }
    let meta = call.extensions.get::<RequestMetaObject>();
    let params = serde_json::to_vec(&call.params).ok()?;
    let fields = params.strip_prefix(b"{")?;
    let mut line = Vec::with_capacity(params.len() + 96);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut line, &request.id).ok()?;
    line.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut line, &call.method).ok()?;
    line.extend_from_slice(b",\"params\":{");
    if let Some(meta) = meta {
        line.extend_from_slice(b"\"_meta\":");
        serde_json::to_writer(&mut line, &meta.0.0).ok()?;
        if fields != b"}" {
            line.push(b',');
        }
    }
    line.extend_from_slice(fields);
    line.extend_from_slice(b"}\n");
    Some(line)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, GetMeta, ListToolsRequest,
        NumberOrString, ProgressToken,
    };
    use serde_json::{Value, json};

    /// What rmcp writes for the same message, read back.
    fn rmcp_reading(request: &JsonRpcRequest<ClientRequest>) -> Value {
        let message = ClientJsonRpcMessage::Request(request.clone());
        serde_json::from_slice(&serde_json::to_vec(&message).unwrap()).unwrap()
    }

    fn ours(request: &JsonRpcRequest<ClientRequest>) -> Value {
        let line = encode(request).expect("a tools/call this writes");
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        serde_json::from_slice(&line).unwrap()
    }

    fn call(params: CallToolRequestParams) -> CallToolRequest {
        CallToolRequest::new(params)
    }

    #[test]
    fn a_tool_call_is_written_as_rmcp_writes_it() {
        let arguments = json!({
            "text": "quote \" backslash \\ newline \n tab \t nul \u{0} é 𝄞 </script>",
            "nested": {"list": [1, -2.5, 1e300, true, null, {"deep": [[["x"]]]}], "empty": {}},
            "n": u64::MAX,
        });
        let mut variants = Vec::new();
        for id in [
            NumberOrString::Number(7),
            NumberOrString::String("a\"b".into()),
        ] {
            let mut params = CallToolRequestParams::new("echo");
            params.arguments = arguments.as_object().cloned();
            let plain = ClientRequest::CallToolRequest(call(params.clone()));
            variants.push(JsonRpcRequest::new(id.clone(), plain.clone()));
            // What rmcp's peer adds before it sends: a progress token, and declarations.
            let mut declared = plain;
            declared
                .get_meta_mut()
                .set_progress_token(ProgressToken(NumberOrString::Number(42)));
            declared
                .get_meta_mut()
                .0
                .0
                .insert("io.example/x".into(), json!({"a": [1]}));
            variants.push(JsonRpcRequest::new(id.clone(), declared));
            let mut bare = ClientRequest::CallToolRequest(call(CallToolRequestParams::new("bare")));
            bare.get_meta_mut().0.0.clear();
            variants.push(JsonRpcRequest::new(id.clone(), bare));
            let mut rounds = params.clone();
            rounds.request_state = Some("opaque \"state\"".into());
            rounds.input_responses = Some(
                serde_json::from_value(json!({"ask-1": {"action": "accept", "content": {"k": 1}}}))
                    .unwrap(),
            );
            let mut rounds = ClientRequest::CallToolRequest(call(rounds));
            rounds
                .get_meta_mut()
                .set_progress_token(ProgressToken(NumberOrString::String("t".into())));
            variants.push(JsonRpcRequest::new(id, rounds));
        }
        for request in &variants {
            assert_eq!(ours(request), rmcp_reading(request));
        }
    }

    #[test]
    fn what_needs_merging_or_is_no_tool_call_goes_rmcps_way() {
        let mut own_meta = CallToolRequestParams::new("echo");
        own_meta.meta = Some(RequestMetaObject::default());
        let with_own = JsonRpcRequest::new(
            NumberOrString::Number(1),
            ClientRequest::CallToolRequest(call(own_meta)),
        );
        assert!(encode(&with_own).is_none());
        let mut legacy = call(CallToolRequestParams::new("echo"));
        legacy.extensions.insert(MetaObject::default());
        let with_legacy = JsonRpcRequest::new(
            NumberOrString::Number(2),
            ClientRequest::CallToolRequest(legacy),
        );
        assert!(encode(&with_legacy).is_none());
        let list = JsonRpcRequest::new(
            NumberOrString::Number(3),
            ClientRequest::ListToolsRequest(ListToolsRequest::default()),
        );
        assert!(encode(&list).is_none());
    }
}
