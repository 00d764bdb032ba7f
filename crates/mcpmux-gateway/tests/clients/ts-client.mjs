// The official TypeScript SDK client (handshake era) driving `mcpmux serve` for the gateway's
// integration tests. Usage:
//   node ts-client.mjs MODULES_DIR '{"stdio":{"command":C,"args":[...],"env":{...}}|"url":U|"sse":U,"actions":[...]}'
// `url` is streamable HTTP (`…/mcp`), `sse` the legacy HTTP+SSE transport (`…/sse`).
// Actions, run in order, each printing one JSON line on stdout:
//   {"do":"list"}                                   -> {"tools":[names]}
//   {"do":"call","name":N,"arguments":{...},"meta":{...}?}  -> {"result":CallToolResult} or {"error":message}
//        (`meta`, when given, is sent as the request's `_meta`: a `traceparent`, …)
//   {"do":"progress_then_cancel","name":N,"arguments":{...}}
//        calls with a progress token, aborts at the first progress -> {"progress":n,"cancelled":bool}
//   {"do":"call_expecting_list_changed","name":N,"arguments":{...}}
//        calls, then waits (10 s at most) for notifications/tools/list_changed -> {"listChanged":bool,"tools":[names]}
//   {"do":"until_listed","present":NAME}|{"do":"until_listed","absent":NAME}
//        lists, and again after each list_changed (10 s at most), until NAME is (not) listed
//        -> {"ok":bool,"tools":[names]}
//   {"do":"capabilities"}                           -> {"capabilities":{...}} (the server's, from initialize)
//   {"do":"resources","meta":{...}?}                -> {"resources":[Resource]}
//   {"do":"templates"}                              -> {"templates":[ResourceTemplate]}
//   {"do":"read","uri":U}                           -> {"contents":[...]} or {"error":message,"code":n}
//   {"do":"prompts","meta":{...}?}                  -> {"prompts":[Prompt]}
//   {"do":"get_prompt","name":N,"arguments":{...}}  -> {"prompt":GetPromptResult} or {"error":message,"code":n}
import { createRequire } from "node:module";
import path from "node:path";

const [modules, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const require = createRequire(path.join(modules, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { SSEClientTransport } = require("@modelcontextprotocol/sdk/client/sse.js");
const { ToolListChangedNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

const transport = scenario.url
  ? new StreamableHTTPClientTransport(new URL(scenario.url))
  : scenario.sse
    ? new SSEClientTransport(new URL(scenario.sse))
    : new StdioClientTransport({ stderr: "ignore", ...scenario.stdio });
// With "wire": true, every message the client sent and received, in order, is printed last:
//   {"wire":[{"dir":"send"|"recv","message":{...}}]}
const wire = [];
if (scenario.wire) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    wire.push({ dir: "send", message: structuredClone(message) });
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, "onmessage", {
    get: () => handler,
    set: (next) => {
      handler = next && ((message, extra) => {
        wire.push({ dir: "recv", message: structuredClone(message) });
        return next(message, extra);
      });
    },
  });
}
const client = new Client({ name: "gateway-test-ts", version: "1.0.0" });
let listChanged = 0;
const listChangedWaiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged += 1;
  for (const wake of listChangedWaiters.splice(0)) wake();
});
await client.connect(transport);

const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const names = async () => (await client.listTools()).tools.map((t) => t.name);

for (const action of scenario.actions) {
  if (action.do === "list") {
    print({ tools: await names(), protocol: client.getServerVersion()?.name });
  } else if (action.do === "call") {
    try {
      const params = { name: action.name, arguments: action.arguments ?? {} };
      if (action.meta) params._meta = action.meta;
      print({ result: await client.callTool(params) });
    } catch (error) {
      print({ error: String(error?.message ?? error) });
    }
  } else if (action.do === "progress_then_cancel") {
    const abort = new AbortController();
    let progress = 0;
    try {
      await client.callTool({ name: action.name, arguments: action.arguments ?? {} }, undefined, {
        signal: abort.signal,
        onprogress: () => {
          progress += 1;
          abort.abort("enough");
        },
        timeout: 20000,
      });
      print({ progress, cancelled: false });
    } catch (error) {
      print({ progress, cancelled: abort.signal.aborted, error: String(error?.message ?? error) });
    }
    // One more round trip before leaving, so the cancellation reached the server before the
    // client goes (and the gateway with it).
    await client.listTools();
  } else if (action.do === "call_expecting_list_changed") {
    await client.listTools(); // startup settled: what changes next is the call's doing
    const before = listChanged;
    const changed = new Promise((resolve) => listChangedWaiters.push(resolve));
    await client.callTool({ name: action.name, arguments: action.arguments ?? {} });
    if (listChanged === before) {
      let timer;
      await Promise.race([changed, new Promise((resolve) => (timer = setTimeout(resolve, 10000)))]);
      clearTimeout(timer);
    }
    print({ listChanged: listChanged > before, tools: await names() });
  } else if (action.do === "until_listed") {
    // Lists, then again after each list_changed (10 s at most), until `present` is listed or
    // `absent` is not.
    const wanted = (tools) =>
      action.present ? tools.includes(action.present) : !tools.includes(action.absent);
    const deadline = Date.now() + 10000;
    let tools = await names();
    while (!wanted(tools) && Date.now() < deadline) {
      let timer;
      const changed = new Promise((resolve) => listChangedWaiters.push(resolve));
      await Promise.race([changed, new Promise((resolve) => (timer = setTimeout(resolve, deadline - Date.now())))]);
      clearTimeout(timer);
      tools = await names();
    }
    print({ ok: wanted(tools), tools });
  } else if (action.do === "capabilities") {
    print({ capabilities: client.getServerCapabilities() ?? null });
  } else if (action.do === "resources") {
    print({ resources: (await client.listResources(action.meta ? { _meta: action.meta } : undefined)).resources });
  } else if (action.do === "templates") {
    print({ templates: (await client.listResourceTemplates()).resourceTemplates });
  } else if (action.do === "read") {
    try {
      print({ contents: (await client.readResource({ uri: action.uri })).contents });
    } catch (error) {
      print({ error: String(error?.message ?? error), code: error?.code ?? null });
    }
  } else if (action.do === "prompts") {
    print({ prompts: (await client.listPrompts(action.meta ? { _meta: action.meta } : undefined)).prompts });
  } else if (action.do === "get_prompt") {
    try {
      print({ prompt: await client.getPrompt({ name: action.name, arguments: action.arguments ?? {} }) });
    } catch (error) {
      print({ error: String(error?.message ?? error), code: error?.code ?? null });
    }
  } else {
    throw new Error(`unknown action ${action.do}`);
  }
}
await client.close();
if (scenario.wire) print({ wire });
