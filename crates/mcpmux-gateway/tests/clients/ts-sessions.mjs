// Several sessions of the official TypeScript SDK client (handshake era) on one `mcpmux serve`,
// each declaring the client capabilities it is given and answering what the server asks with
// its own answers: for the gateway's tests of what an upstream server asks mid-call, policy
// approvals, subscriptions, list changes, completions, logging and pagination. Usage:
//   node ts-sessions.mjs MODULES_DIR '{"url":U | "stdio":{...}, "sessions":[SESSION...], "actions":[ACTION...]}'
// A SESSION: {"capabilities": {...client capabilities...}, "name": N, "approve": bool,
//   "action": "accept"|"decline"|"cancel", "model": M, "roots": [{"uri":...}]}
//   Each elicitation it is sent is answered with `action` (default accept) and, for a form
//   asking for `approve`, {"approve": approve}, else {"name": name}; each sampling with
//   "hello from N" by `model`; each roots/list with `roots`.
// Actions, run in order (each with "session": i, default 0), each printing one JSON line:
//   {"do":"call","name":T,"arguments":{...}}   -> {"result":CallToolResult} or {"error":message,"code":n}
//   {"do":"parallel","actions":[...]}          -> {"parallel":[line...]} (the actions run at once)
//   {"do":"asked"}                             -> {"asked":[{"method":m,"message":text}...]} (what this session was asked)
//   {"do":"subscribe","uri":U} / {"do":"unsubscribe","uri":U} -> {"ok":true} or {"error":message,"code":n}
//   {"do":"wait","method":M,"count":n}         -> {"seen":bool,"notifications":[params...]}
//        waits (10 s at most) until this session has had n notifications M
//   {"do":"notifications","method":M}          -> {"notifications":[params...]} (so far, no wait)
//   {"do":"complete","ref":{...},"argument":{...},"context":{...}} -> {"completion":{...}} or {"error":...}
//   {"do":"set_level","level":L}               -> {"ok":true} or {"error":...}
//   {"do":"capabilities"}                      -> {"capabilities":{...}}
//   {"do":"pages","list":"tools"|"resources"|"prompts"} -> {"pages":n,"items":[names or uris]}
//   {"do":"list","list":"tools","cursor":C}    -> {"items":[...],"nextCursor":C} or {"error":message,"code":n}
// At the end every session is ended (over HTTP with a DELETE, as a client that leaves does).
import { createRequire } from "node:module";
import path from "node:path";

const [modules, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const require = createRequire(path.join(modules, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const types = require("@modelcontextprotocol/sdk/types.js");

const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const failure = (error) => ({ error: String(error?.message ?? error), code: error?.code ?? null });

const NOTIFICATIONS = {
  "notifications/resources/updated": types.ResourceUpdatedNotificationSchema,
  "notifications/resources/list_changed": types.ResourceListChangedNotificationSchema,
  "notifications/prompts/list_changed": types.PromptListChangedNotificationSchema,
  "notifications/tools/list_changed": types.ToolListChangedNotificationSchema,
  "notifications/message": types.LoggingMessageNotificationSchema,
};

async function open(spec) {
  const capabilities = spec.capabilities ?? {};
  const client = new Client({ name: "gateway-test-sessions", version: "1.0.0" }, { capabilities });
  const session = { client, transport: null, asked: [], seen: {}, waiters: [] };
  for (const [method, schema] of Object.entries(NOTIFICATIONS)) {
    session.seen[method] = [];
    client.setNotificationHandler(schema, (notification) => {
      session.seen[method].push(notification.params ?? {});
      for (const wake of session.waiters.splice(0)) wake();
    });
  }
  if (capabilities.elicitation) {
    client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
      session.asked.push({ method: "elicitation/create", message: request.params.message });
      const action = spec.action ?? "accept";
      if (action !== "accept") return { action };
      const properties = request.params.requestedSchema?.properties ?? {};
      const content = "approve" in properties ? { approve: spec.approve ?? false } : { name: spec.name ?? "nobody" };
      return { action, content };
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler(types.CreateMessageRequestSchema, async (request) => {
      session.asked.push({ method: "sampling/createMessage", message: request.params.messages?.[0]?.content?.text });
      return {
        role: "assistant",
        model: spec.model ?? "test-model",
        content: { type: "text", text: `hello from ${spec.name ?? "nobody"}` },
        stopReason: "endTurn",
      };
    });
  }
  if (capabilities.roots) {
    client.setRequestHandler(types.ListRootsRequestSchema, async () => {
      session.asked.push({ method: "roots/list" });
      return { roots: spec.roots ?? [] };
    });
  }
  session.transport = scenario.url
    ? new StreamableHTTPClientTransport(new URL(scenario.url))
    : new StdioClientTransport({ stderr: "ignore", ...scenario.stdio });
  await client.connect(session.transport);
  return session;
}

async function waitFor(session, method, count) {
  const deadline = Date.now() + 10000;
  while (session.seen[method].length < count && Date.now() < deadline) {
    let timer;
    const woken = new Promise((resolve) => session.waiters.push(resolve));
    await Promise.race([woken, new Promise((resolve) => (timer = setTimeout(resolve, deadline - Date.now())))]);
    clearTimeout(timer);
  }
  return { seen: session.seen[method].length >= count, notifications: session.seen[method] };
}

async function list(client, kind, cursor) {
  const params = cursor === undefined ? undefined : { cursor };
  if (kind === "tools") {
    const page = await client.listTools(params);
    return { items: page.tools.map((t) => t.name), nextCursor: page.nextCursor };
  }
  if (kind === "resources") {
    const page = await client.listResources(params);
    return { items: page.resources.map((r) => r.uri), nextCursor: page.nextCursor };
  }
  const page = await client.listPrompts(params);
  return { items: page.prompts.map((p) => p.name), nextCursor: page.nextCursor };
}

const sessions = [];
for (const spec of scenario.sessions ?? [{}]) sessions.push(await open(spec));

async function run(action) {
  const session = sessions[action.session ?? 0];
  const client = session.client;
  switch (action.do) {
    case "call":
      try {
        return { result: await client.callTool({ name: action.name, arguments: action.arguments ?? {} }, undefined, { timeout: 30000 }) };
      } catch (error) {
        return failure(error);
      }
    case "parallel":
      return { parallel: await Promise.all(action.actions.map(run)) };
    case "asked":
      return { asked: session.asked };
    case "subscribe":
    case "unsubscribe":
      try {
        if (action.do === "subscribe") await client.subscribeResource({ uri: action.uri });
        else await client.unsubscribeResource({ uri: action.uri });
        return { ok: true };
      } catch (error) {
        return failure(error);
      }
    case "wait":
      return await waitFor(session, action.method, action.count ?? 1);
    case "notifications":
      return { notifications: session.seen[action.method] };
    case "complete":
      try {
        const params = { ref: action.ref, argument: action.argument };
        if (action.context) params.context = { arguments: action.context };
        return { completion: (await client.complete(params)).completion };
      } catch (error) {
        return failure(error);
      }
    case "set_level":
      try {
        await client.setLoggingLevel(action.level);
        return { ok: true };
      } catch (error) {
        return failure(error);
      }
    case "capabilities":
      return { capabilities: client.getServerCapabilities() ?? null };
    case "pages": {
      const items = [];
      let pages = 0;
      let cursor;
      do {
        const page = await list(client, action.list, cursor);
        pages += 1;
        items.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor !== undefined && pages < 10000);
      return { pages, items };
    }
    case "list":
      try {
        return await list(client, action.list, action.cursor);
      } catch (error) {
        return failure(error);
      }
    default:
      throw new Error(`unknown action ${action.do}`);
  }
}

for (const action of scenario.actions) print(await run(action));
// Over HTTP each session is ended as a client that leaves does (DELETE), then closed.
for (const session of sessions) {
  if (session.transport.terminateSession) await session.transport.terminateSession().catch(() => {});
  await session.client.close();
}
