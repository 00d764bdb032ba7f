// The TypeScript SDK's client in the side-by-side benchmark: the same phases as the other
// clients, one JSON line of figures on stdout. Usage:
//   node ts-client.mjs MODULES_DIR '{"cold":N,"calls":N,"total":N,"in_flight":N,"servers":N,"server":[CMD, ARGS...]}'
import { createRequire } from "node:module";
import path from "node:path";

const [modules, configText] = process.argv.slice(2);
const config = JSON.parse(configText);
const require = createRequire(path.join(modules, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

async function connect() {
  const [command, ...args] = config.server;
  const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
  const client = new Client({ name: "bench-ts", version: "1.0.0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  if (tools.length === 0) throw new Error("the server listed no tools");
  return client;
}

async function echo(client, text) {
  const result = await client.callTool({ name: "echo", arguments: { text } });
  const got = result.content[0].text;
  if (got !== text) throw new Error(`asked ${text}, got ${got}`);
}

const now = () => process.hrtime.bigint();
const micros = (a, b) => Number(b - a) / 1000;
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p))];

const cold = [];
for (let i = 0; i < config.cold; i++) {
  const start = now();
  const client = await connect();
  cold.push(micros(start, now()));
  await client.close();
}
cold.sort((a, b) => a - b);

const client = await connect();
for (let i = 0; i < 200; i++) await echo(client, `warm ${i}`);
const latencies = [];
const cpuBefore = process.cpuUsage();
for (let i = 0; i < config.calls; i++) {
  const start = now();
  await echo(client, `call ${i}`);
  latencies.push(micros(start, now()));
}
const cpu = process.cpuUsage(cpuBefore);
const cpuPerCall = (cpu.user + cpu.system) / config.calls;
latencies.sort((a, b) => a - b);

const perWorker = Math.floor(config.total / config.in_flight);
let start = now();
await Promise.all(
  Array.from({ length: config.in_flight }, async (_, w) => {
    for (let i = 0; i < perWorker; i++) await echo(client, `w${w} c${i}`);
  }),
);
const callsPerSec = (perWorker * config.in_flight) / (micros(start, now()) / 1e6);
await client.close();
const oneServerRssMb = process.resourceUsage().maxRSS / 1024;

start = now();
const many = await Promise.all(Array.from({ length: config.servers }, () => connect()));
const serversMs = micros(start, now()) / 1000;
await Promise.all(many.map((c) => c.close()));

console.log(
  JSON.stringify({
    cold_ms: percentile(cold, 0.5) / 1000,
    p50_us: percentile(latencies, 0.5),
    p99_us: percentile(latencies, 0.99),
    cpu_per_call_us: cpuPerCall,
    calls_per_sec: callsPerSec,
    servers_ms: serversMs,
    peak_rss_one_mb: oneServerRssMb,
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,
  }),
);
process.exit(0);
