// A dependency-free MCP server over stdio (handshake era, newline-delimited JSON-RPC) with one
// `echo` tool: the common server every client in the side-by-side benchmark talks to, so the
// figures measure the clients, not a server SDK.
import { createInterface } from "node:readline";

const tool = {
  name: "echo",
  description: "Returns its text argument unchanged.",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The text to return." } },
    required: ["text"],
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
};

function answer(id, result) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
}

function fail(id, code, message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } }) + "\n");
}

const versions = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = message;
  if (id === undefined || id === null) return; // a notification
  switch (method) {
    case "initialize": {
      const asked = params?.protocolVersion;
      answer(id, {
        protocolVersion: versions.includes(asked) ? asked : versions[0],
        capabilities: { tools: {} },
        serverInfo: { name: "echo", version: "1.0.0" },
      });
      break;
    }
    case "ping":
      answer(id, {});
      break;
    case "tools/list":
      answer(id, { tools: [tool] });
      break;
    case "tools/call":
      if (params?.name !== "echo") {
        fail(id, -32602, `unknown tool ${params?.name}`);
      } else {
        answer(id, { content: [{ type: "text", text: String(params.arguments?.text ?? "") }] });
      }
      break;
    default:
      fail(id, -32601, `method not found: ${method}`);
  }
});
process.stdin.on("end", () => process.exit(0));
