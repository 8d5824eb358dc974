// client.mjs drives an MCP server's tool surface with the TypeScript SDK
// client, as a host built on @modelcontextprotocol/sdk would. The Go test
// mcpsdk/tools_ts_test.go starts the server, runs this script with one JSON
// argument and checks the JSON it prints. The argument is one run's
// configuration, or an array of them: then the runs go one after another,
// each with a client and connection of its own, and the output is the
// array of their outputs (one node process instead of one per run).
// A configuration:
//
//   {"url": "http://...", "token": "..."}   streamable HTTP, optional bearer token
//   {"command": "...", "args": [...], "env": {...}}   stdio, a server process
//   "calls": [{"name": "...", "arguments": {...}}]   tools to call in order
//   "listTool": "list_resources"   page this tool to the end
//
// Output: {"serverVersion", "capabilities", "tools", "calls": [{"result"} |
// {"error"}], "pages": [result...]}, each result as the client parsed it
// (the SDK validates every result against its schemas and throws on one
// that does not conform).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const arg = JSON.parse(process.argv[2]);

function transport(cfg) {
  if (cfg.url) {
    const headers = cfg.token ? { Authorization: `Bearer ${cfg.token}` } : {};
    return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers } });
  }
  return new StdioClientTransport({
    command: cfg.command,
    args: cfg.args ?? [],
    env: { ...process.env, ...(cfg.env ?? {}) },
    stderr: 'inherit',
  });
}

async function run(cfg) {
  const client = new Client({ name: 'mcpsdk-ts-test', version: '1.0.0' });
  await client.connect(transport(cfg));
  const out = {
    serverVersion: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    tools: (await client.listTools()).tools,
    calls: [],
    pages: [],
  };
  for (const call of cfg.calls ?? []) {
    try {
      out.calls.push({ result: await client.callTool({ name: call.name, arguments: call.arguments }) });
    } catch (e) {
      out.calls.push({ error: { code: e.code ?? null, message: String(e.message ?? e) } });
    }
  }
  if (cfg.listTool) {
    let cursor;
    for (let i = 0; i < 50; i++) {
      const res = await client.callTool({ name: cfg.listTool, arguments: cursor ? { cursor } : {} });
      out.pages.push(res);
      if (res.isError) break;
      cursor = JSON.parse(res.content[0].text).nextCursor;
      if (!cursor) break;
    }
  }
  await client.close();
  return out;
}

async function main() {
  if (!Array.isArray(arg)) {
    process.stdout.write(JSON.stringify(await run(arg)));
    return;
  }
  const outs = [];
  for (const cfg of arg) {
    outs.push(await run(cfg));
  }
  process.stdout.write(JSON.stringify(outs));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
