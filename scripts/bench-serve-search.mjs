// `mcpmux serve --search` measured end to end with the official TypeScript SDK client, on the
// catalog the tool-search bench uses (server-everything, server-filesystem, server-memory,
// Python's mcp-server-time, `mcpmux-testserver --many-tools 172`): the bytes of `tools/list`
// with and without --search (tokens estimated as bytes / 4, the rule `run`'s deferral uses), and
// recall@5 of `search_tools` over the labelled queries of
// crates/mcpmux-agent/testdata/search_queries.json (held-out set included), each query one
// `tools/call` through the gateway. Then one task end to end with an agent loop
// (crates/mcpmux-gateway/tests/clients/ts-agent.mjs) and the scripted model endpoint
// (target/debug/mcpmux-testmodel, Anthropic wire): with --search the model searches, then calls
// the calendar tool it found by name (the client lists again after `list_changed`), then
// answers; on plain `serve` it calls the tool directly. The bytes of each request the client
// sent the model are reported for both (`agent`). Needs scripts/install-test-deps.sh and
// scripts/build-test-programs.sh. Usage: node scripts/bench-serve-search.mjs  (prints JSON)
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const W = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(W, "test-deps/node_modules/package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mcpmux-serve-search-"));
const home = path.join(dir, "home");
const files = path.join(dir, "files");
fs.mkdirSync(home, { recursive: true });
fs.mkdirSync(files, { recursive: true });
const bin = (p) => path.join(W, "test-deps", p);
fs.writeFileSync(path.join(home, ".claude.json"), JSON.stringify({ mcpServers: {
  everything: { command: bin("node_modules/.bin/mcp-server-everything"), args: ["stdio"] },
  filesystem: { command: bin("node_modules/.bin/mcp-server-filesystem"), args: [files] },
  memory: { command: bin("node_modules/.bin/mcp-server-memory"), args: [], env: { MEMORY_FILE_PATH: path.join(files, "memory.jsonl") } },
  time: { command: bin(".venv/bin/mcp-server-time"), args: [] },
  apps: { command: path.join(W, "target/debug/mcpmux-testserver"), args: ["--many-tools", "172"] },
} }));
const env = { HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), XDG_CACHE_HOME: path.join(home, ".cache"), PATH: process.env.PATH };

async function connect(args) {
  const transport = new StdioClientTransport({ command: path.join(W, "target/debug/mcpmux"), args: ["serve", ...args], env, cwd: dir, stderr: "ignore" });
  const client = new Client({ name: "bench-serve-search", version: "1" });
  await client.connect(transport);
  return client;
}

const plain = await connect([]);
const all = (await plain.listTools()).tools;
await plain.close();
const searching = await connect(["--search"]);
const listed = (await searching.listTools()).tools;
const set = JSON.parse(fs.readFileSync(path.join(W, "crates/mcpmux-agent/testdata/search_queries.json")));
async function recall(queries) {
  let total = 0;
  for (const q of queries) {
    const answer = await searching.callTool({ name: "search_tools", arguments: { query: q.query } });
    const names = new Set(JSON.parse(answer.content[0].text).tools.map((t) => t.name));
    total += q.expected.filter((e) => names.has(e)).length / Math.max(1, q.expected.length);
  }
  return total / Math.max(1, queries.length);
}
const tuned = await recall(set.queries);
const heldOut = await recall(set.held_out);
const everyQuery = await recall([...set.queries, ...set.held_out]);
await searching.close();

// One agent task: `steps` scripted, the client on `serve ARGS`; its per-request bytes.
const FOUND = "mcp__apps__calendar_get_event";
async function agent(args, steps) {
  const model = spawn(path.join(W, "target/debug/mcpmux-testmodel"), ["anthropic", JSON.stringify(steps)], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: model.stdout })[Symbol.asyncIterator]();
  const base = (await lines.next()).value;
  const scenario = {
    stdio: { command: path.join(W, "target/debug/mcpmux"), args: ["serve", ...args], env, cwd: dir },
    model: base, prompt: "What is calendar event e1?", relist: true,
  };
  const run = spawnSync("node", [path.join(W, "crates/mcpmux-gateway/tests/clients/ts-agent.mjs"), path.join(W, "test-deps/node_modules"), JSON.stringify(scenario)], { encoding: "utf8" });
  model.stdin.end();
  const report = JSON.parse((await lines.next()).value);
  if (run.status !== 0) throw new Error(`the agent failed: ${run.stderr}`);
  const out = run.stdout.trim().split("\n").map((l) => JSON.parse(l));
  const end = out.at(-1);
  // With --search, the found tool is listed from the second request on: the search found it.
  const listedAfter = args.length === 0 || out.filter((l) => l.turn).at(-1).tools.includes(FOUND);
  if (report.violations.length || report.remaining || !end.calls.includes(FOUND) || !listedAfter) {
    throw new Error(`the task was not done: ${JSON.stringify({ report, end })}`);
  }
  return out.filter((l) => l.turn).map((l) => ({ bytes: l.bytes, tool_bytes: l.tool_bytes, tools: l.tools.length }));
}
const call = [FOUND, JSON.stringify({ id: "e1" })];
const answer = { text: "Event e1 is on the calendar." };
const agentSearch = await agent(["--search"], [{ tool_calls: [["search_tools", JSON.stringify({ query: "get a calendar event" })]] }, { tool_calls: [call] }, answer]);
const agentPlain = await agent([], [{ tool_calls: [call] }, answer]);
fs.rmSync(dir, { recursive: true, force: true });
const sum = (turns) => turns.reduce((n, t) => n + t.bytes, 0);
const bytes = (tools) => JSON.stringify(tools).length;
console.log(JSON.stringify({
  tools: all.length,
  tools_list_bytes: bytes(all),
  tools_list_tokens: Math.ceil(bytes(all) / 4),
  search_listed: listed.map((t) => t.name),
  search_tools_list_bytes: bytes(listed),
  search_tools_list_tokens: Math.ceil(bytes(listed) / 4),
  recall_at_5: everyQuery,
  recall_tuned: tuned,
  recall_held_out: heldOut,
  queries: set.queries.length + set.held_out.length,
  agent: { search: agentSearch, plain: agentPlain, search_total_bytes: sum(agentSearch), plain_total_bytes: sum(agentPlain) },
}));
