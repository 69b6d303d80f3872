// A third-party MCP client for tests/mcp: the TypeScript SDK from the npm registry connects to
// browser-agent (stdio: node client.mjs stdio BINARY ARGS...; HTTP: node client.mjs http URL),
// lists the tools, calls each of them against the demo site and prints one JSON object on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
const client = new Client({ name: "npm-sdk-client", version: "1.32.2" });
await client.connect(transport);

const out = { server: client.getServerVersion(), tools: [], calls: [] };
const listed = await client.listTools();
for (const t of listed.tools) {
  out.tools.push({ name: t.name, readOnlyHint: t.annotations?.readOnlyHint === true, schema: t.inputSchema });
}
async function call(name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    const sc = r.structuredContent ?? {};
    out.calls.push({ name, isError: r.isError === true, status: sc.status, rule: sc.rule ?? "", reason: sc.reason ?? "", source: sc.source ?? "", text: r.content?.[0]?.text ?? "" });
    return sc;
  } catch (e) {
    out.calls.push({ name, protocolError: String(e.message ?? e) });
    return {};
  }
}
const s = await call("search_site", { query: "SYN-0042" });
const origin = (s.source ?? "").split("/search")[0];
await call("list_links", {});
await call("open_url", { url: origin + "/records/SYN-0042" });
await call("read_page", {});
const f = await call("extract_fields", {});
const fields = {};
for (const x of f.untrusted_page_data?.fields ?? []) fields[x.label] = x.value;
await call("check_answer", { record_id: "SYN-0042", fields: { Status: fields.Status ?? "" }, sources: [origin + "/records/SYN-0042"] });
await call("open_url", { url: origin + "/records/SYN-0042/delete" });
await call("open_url", { URL: origin });
await call("browser_evaluate", { function: "() => document.cookie" });
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
