// A small agent loop on the official TypeScript SDK client (handshake era): it connects to
// `mcpmux serve` (stdio or streamable HTTP), lists the tools, sends them as tool definitions to
// a model endpoint speaking the Anthropic Messages API, runs the tool calls the model asks for
// through the MCP session and sends their results back, until the model answers with text.
// Usage:
//   node ts-agent.mjs MODULES_DIR '{"stdio":{...}|"url":U,"model":BASE_URL,"prompt":P,"relist":bool}'
// With "relist": true the client lists again when the server sends
// notifications/tools/list_changed (waiting up to 10 s for it after a `search_tools` call that
// found tools it does not list yet), so it calls what it found by name; without, it lists once.
// Prints one JSON line per model request, {"turn":n,"bytes":B,"tool_bytes":T,"tools":[names]}
// (B the request body's bytes, T those of its `tools`), then {"answer":text,"calls":[names]}.
import { createRequire } from "node:module";
import path from "node:path";

const [modules, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const require = createRequire(path.join(modules, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

const MAX_TURNS = 8;
const transport = scenario.url
  ? new StreamableHTTPClientTransport(new URL(scenario.url))
  : new StdioClientTransport({ stderr: "ignore", ...scenario.stdio });
const client = new Client({ name: "gateway-test-ts-agent", version: "1.0.0" });
let changed = 0;
const waiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed += 1;
  for (const wake of waiters.splice(0)) wake();
});
await client.connect(transport);

const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");
let tools = (await client.listTools()).tools;
let seen = changed;

async function relistIfChanged(expectChange) {
  if (expectChange && changed === seen) {
    let timer;
    await Promise.race([
      new Promise((resolve) => waiters.push(resolve)),
      new Promise((resolve) => (timer = setTimeout(resolve, 10000))),
    ]);
    clearTimeout(timer);
  }
  if (changed !== seen) {
    seen = changed;
    tools = (await client.listTools()).tools;
  }
}

const messages = [{ role: "user", content: scenario.prompt }];
const calls = [];
for (let turn = 1; turn <= MAX_TURNS; turn += 1) {
  const definitions = tools.map((t) => ({
    name: t.name,
    description: t.description ?? "",
    input_schema: t.inputSchema,
  }));
  const body = JSON.stringify({ model: "scripted", max_tokens: 1024, messages, tools: definitions });
  print({
    turn,
    bytes: Buffer.byteLength(body),
    tool_bytes: Buffer.byteLength(JSON.stringify(definitions)),
    tools: tools.map((t) => t.name),
  });
  const response = await fetch(`${scenario.model}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "test", "anthropic-version": "2023-06-01" },
    body,
  });
  if (!response.ok) throw new Error(`the model answered ${response.status}: ${await response.text()}`);
  const message = await response.json();
  messages.push({ role: "assistant", content: message.content });
  const uses = message.content.filter((block) => block.type === "tool_use");
  if (uses.length === 0) {
    const answer = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    print({ answer, calls });
    await client.close();
    process.exit(0);
  }
  const results = [];
  let searchedNew = false;
  for (const use of uses) {
    calls.push(use.name);
    const result = await client.callTool({ name: use.name, arguments: use.input ?? {} });
    const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
    if (use.name === "search_tools" && !result.isError) {
      const listed = new Set(tools.map((t) => t.name));
      searchedNew ||= JSON.parse(text).tools.some((t) => !listed.has(t.name));
    }
    results.push({ type: "tool_result", tool_use_id: use.id, content: text, is_error: result.isError === true });
  }
  messages.push({ role: "user", content: results });
  if (scenario.relist) await relistIfChanged(searchedNew);
}
throw new Error(`no answer in ${MAX_TURNS} turns`);
