/**
 * An agent that calls a tool of an MCP server protected by agent-auth: the official MCP client
 * (`@modelcontextprotocol/sdk`) with the agent SDK's provider (`@agent-auth/agent/mcp`). It knows
 * only the MCP server's URL and its own credentials; the rest comes from the server's 401.
 *
 * Run it:  MCP_URL=http://localhost:8090/mcp AGENT_AUTH_URL=http://localhost:3000 AGENT_ID=… AGENT_SECRET=… \
 *          npx tsx examples/mcp-agent/agent.ts
 * (AGENT_KEY_FILE=agent-key.pem in place of AGENT_SECRET for an agent that signs with a key; AGENT_DPOP=1 binds
 * its tokens to a key of its own, RFC 9449.)
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { AgentAuthClient } from '@agent-auth/agent';
import { agentOAuthProvider, type AgentOAuthProviderOptions } from '@agent-auth/agent/mcp';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * An MCP client connected to `mcpUrl` as `agent`. The first attempt meets the 401, and the
 * provider signs the agent in; the code then buys the tokens, and the second attempt connects.
 */
export async function connectAsAgent(mcpUrl: string, agent: AgentAuthClient, options?: AgentOAuthProviderOptions) {
  const provider = agentOAuthProvider(agent, options);
  const client = new Client({ name: 'agent-auth example agent', version: '1.0.0' });
  // The provider's fetch adds DPoP proofs when it was asked to bind the tokens (options.dpop).
  const transport = () => new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: provider.fetch });
  const first = transport();
  try {
    await client.connect(first);
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
    await first.finishAuth(await provider.authorizationCode());
    await client.connect(transport());
  }
  return { client, provider };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const {
    MCP_URL = 'http://localhost:8090/mcp',
    AGENT_AUTH_URL = 'http://localhost:3000',
    AGENT_ID,
    AGENT_SECRET,
    AGENT_KEY_FILE,
    AGENT_DPOP,
  } = process.env;
  // The agent's secret, or its private key (PEM): with a key and an https agent-auth, the MCP client is the agent's own client-metadata document.
  const credentials = AGENT_KEY_FILE ? { privateKey: readFileSync(AGENT_KEY_FILE, 'utf8') } : { agentSecret: AGENT_SECRET! };
  const agent = new AgentAuthClient({ baseUrl: AGENT_AUTH_URL, agentId: AGENT_ID!, model: 'my-model-1', ...credentials });
  const { client } = await connectAsAgent(MCP_URL, agent, { signIn: { onStatus: (s) => console.error(`sign-in: ${s}`) }, dpop: AGENT_DPOP === '1' });
  const result = await client.callTool({ name: 'whoami' });
  console.log((result.content as { type: string; text: string }[])[0].text);
  await client.close();
}
