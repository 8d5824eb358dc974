// oauth.mjs connects to an MCP server that is an OAuth 2.1 resource server,
// as a host built on @modelcontextprotocol/sdk would: with no token at
// first, so that the SDK's auth flow discovers the protected resource
// metadata from the 401, then the authorization server, and gets a token
// by the client credentials grant (ClientCredentialsProvider). The Go test
// integration/oauth_ts_test.go registers the client with Ory Hydra, starts
// the server, runs this script with one JSON argument and checks what it
// prints.
//
//   {"url": "http://127.0.0.1:PORT/mcp", "clientId": "...", "clientSecret": "...",
//    "scope": "...", "audience": "...", "reads": ["uri", ...]}
//
// Output: {"fetched": [every URL the client fetched, in order],
// "reads": [{"text"} | {"error"}]}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const cfg = JSON.parse(process.argv[2]);

// Hydra names the RFC 8707 resource "audience"; the SDK sends "resource"
// as well, which Hydra ignores.
class AudienceProvider extends ClientCredentialsProvider {
  prepareTokenRequest(scope) {
    const params = super.prepareTokenRequest(scope);
    params.set('audience', cfg.audience);
    return params;
  }
}

const fetched = [];
const logged = (url, init) => {
  fetched.push(String(url instanceof Request ? url.url : url));
  return fetch(url, init);
};

const provider = new AudienceProvider({ clientId: cfg.clientId, clientSecret: cfg.clientSecret, scope: cfg.scope });
const client = new Client({ name: 'mcpres-oauth-ts-test', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(cfg.url), { authProvider: provider, fetch: logged }));
const reads = [];
for (const uri of cfg.reads ?? []) {
  try {
    const res = await client.readResource({ uri });
    reads.push({ text: res.contents[0].text });
  } catch (e) {
    reads.push({ error: String(e.message ?? e) });
  }
}
await client.close();
process.stdout.write(JSON.stringify({ fetched, reads }));
