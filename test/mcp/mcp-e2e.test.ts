import { AgentAuthClient } from '@agent-auth/agent';
import { type AgentOAuthProviderOptions } from '@agent-auth/agent/mcp';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsAgent } from '../../examples/mcp-agent/agent.js';
import { type RunningMcpExample, startMcpExample } from '../../examples/mcp-server/server.js';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { signInOwner } from '../helpers/owner.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { type Listening, startHttpsServer, type TestCertificates, testCertificates } from '../helpers/tls.js';

/** Resource tokens live this long here, so that a revocation shows within the test. */
const TOKEN_TTL_SECONDS = 3;
/** The website kit's default leeway on `exp`. */
const CLOCK_TOLERANCE_SECONDS = 5;

/**
 * The official MCP SDK on both sides: the example MCP server (its StreamableHTTPServerTransport
 * behind the website kit) and the example agent (its Client and StreamableHTTPClientTransport with
 * agentOAuthProvider), which knows only the server's URL and its own credentials.
 */
describe(`an MCP client signs in as an agent to an MCP server protected by agent-auth (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: ListeningServer;
  let mcp: RunningMcpExample;
  let other: RunningMcpExample;
  let certs: TestCertificates;
  let documentHost: Listening;
  let documentFetches = 0;

  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startListeningServer({
      SMTP_URL: smtp.url,
      RESOURCE_ACCESS_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
      RATE_LIMIT_EMAIL_LINK_PER_IP: '1000',
    });
    mcp = await startMcpExample({ issuer: server.issuer });
    other = await startMcpExample({ issuer: server.issuer });
    for (const [resource, name] of [
      [mcp.url, 'Example MCP'],
      [other.url, 'Other MCP'],
    ]) {
      expect((await server.adminCall('POST', '/admin/resources', { resource, name, scopes: ['email'] })).statusCode).toBe(201);
    }
    // A Client ID Metadata Document of the test's own, over https with the test's CA, which agent-auth trusts.
    certs = testCertificates();
    server.services.clientDocuments.ca = certs.ca;
    documentHost = await startHttpsServer(certs, (req, res) => {
      documentFetches++;
      const clientId = `https://127.0.0.1:${documentHost.port}${req.url}`;
      const document = {
        client_id: clientId,
        client_name: 'Test MCP client',
        redirect_uris: ['http://127.0.0.1/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' }).end(JSON.stringify(document));
    });
  });
  afterAll(async () => {
    await documentHost?.close();
    certs?.remove();
    await mcp?.close();
    await other?.close();
    await server?.close();
    await smtp?.close();
  });

  /** A new agent (of a new owner unless given) as the SDK's client. */
  async function newAgent(email = `owner-${crypto.randomUUID()}@example.com`) {
    const agent = await server.createAgent(email);
    const sdk = new AgentAuthClient({ baseUrl: server.issuer, agentId: agent.agent_id, agentSecret: agent.agent_secret, model: 'mcp-model-1' });
    return { agent, sdk };
  }

  async function whoami(client: Awaited<ReturnType<typeof connectAsAgent>>['client']) {
    const result = await client.callTool({ name: 'whoami' });
    return JSON.parse((result.content as { text: string }[])[0].text);
  }

  /** Registered beforehand: a website's client with a fixed redirect URI. */
  async function registeredClient(): Promise<AgentOAuthProviderOptions> {
    const website = await server.createClient(['http://127.0.0.1:8123/callback']);
    return { client: { client_id: website.client_id, client_secret: website.client_secret }, redirectUrl: website.redirect_uris[0] };
  }

  /** A refresh as anyone holding the refresh token and the client's credentials could send it: no DPoP proof. */
  const plainRefresh = (refreshToken: string, options: AgentOAuthProviderOptions) =>
    fetch(`${server.issuer}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, ...(options.client as Record<string, string>) }),
    });

  it('calls the tool as the agent, through a client registered beforehand', async () => {
    const { agent, sdk } = await newAgent();
    const options = await registeredClient();
    const { client } = await connectAsAgent(mcp.url, sdk, options);
    try {
      expect(await whoami(client)).toEqual({
        agent_id: agent.agent_id,
        owner_email: agent.email,
        client_id: (options.client as { client_id: string }).client_id,
      });
    } finally {
      await client.close();
    }
  });

  it('signs in through dynamic registration, given nothing but the server URL and the agent’s credentials', async () => {
    const { agent, sdk } = await newAgent();
    const { client, provider } = await connectAsAgent(mcp.url, sdk);
    try {
      const registered = (await provider.clientInformation())!;
      expect(registered.client_id).not.toMatch(/^https?:/);
      expect(await whoami(client)).toEqual({ agent_id: agent.agent_id, owner_email: agent.email, client_id: registered.client_id });
    } finally {
      await client.close();
    }
  });

  it('signs in as a Client ID Metadata Document that the MCP client names, which agent-auth fetches over https', async () => {
    const { agent, sdk } = await newAgent();
    const documentUrl = `https://127.0.0.1:${documentHost.port}/mcp-client.json`;
    const before = documentFetches;
    const { client } = await connectAsAgent(mcp.url, sdk, { client: documentUrl });
    try {
      expect(await whoami(client)).toEqual({ agent_id: agent.agent_id, owner_email: agent.email, client_id: documentUrl });
      expect(documentFetches - before).toBe(1);
    } finally {
      await client.close();
    }
  });

  it("after the owner's kill switch, the old token stops working within its lifetime and the MCP client must sign in again", async () => {
    const email = `owner-${crypto.randomUUID()}@example.com`;
    const { sdk } = await newAgent(email);
    const options = await registeredClient();
    const { client, provider } = await connectAsAgent(mcp.url, sdk, options);
    try {
      expect((await whoami(client)).owner_email).toBe(email);
      const tokens = (await provider.tokens())!;
      const owner = await signInOwner(server.app, smtp, email, server.issuer);
      expect((await owner.call('POST', '/account/api/revoke-all')).statusCode).toBe(204);
      const revokedAt = Date.now();

      // The token verifies on its own until it expires (plus the kit's 5 s clock tolerance); then neither
      // it nor its refresh token buys anything.
      await expect
        .poll(async () => (await fetch(mcp.url, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } })).status, {
          timeout: (TOKEN_TTL_SECONDS + CLOCK_TOLERANCE_SECONDS + 5) * 1000,
          interval: 250,
        })
        .toBe(401);
      expect(Date.now() - revokedAt).toBeLessThanOrEqual((TOKEN_TTL_SECONDS + CLOCK_TOLERANCE_SECONDS + 1) * 1000);
      const refreshed = await plainRefresh(tokens.refresh_token!, options);
      expect(refreshed.status).toBe(400);
      // The MCP client's next call: its refresh fails, the provider signs in anew, and the call reports it.
      await expect(client.callTool({ name: 'whoami' })).rejects.toBeInstanceOf(UnauthorizedError);
    } finally {
      await client.close();
    }
  });

  it('binds the tokens to a key of the agent with dpop: a copied token is refused, the MCP client goes on', async () => {
    const { agent, sdk } = await newAgent();
    const options = await registeredClient();
    const { client, provider } = await connectAsAgent(mcp.url, sdk, { ...options, dpop: true });
    try {
      expect((await whoami(client)).agent_id).toBe(agent.agent_id);
      const tokens = (await provider.tokens())!;
      expect(tokens.token_type).toBe('DPoP');
      const { cnf } = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString());
      expect(cnf.jkt).toMatch(/^[\w-]{43}$/);
      // Copied, the token alone buys nothing: as a bearer token, or under the DPoP scheme without the key.
      const copied = await fetch(mcp.url, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(copied.status).toBe(401);
      expect((await fetch(mcp.url, { method: 'POST', headers: { authorization: `DPoP ${tokens.access_token}` } })).status).toBe(401);
      // The refresh token is bound too: refreshed without a proof of the key, it is refused.
      const refreshed = await plainRefresh(tokens.refresh_token!, options);
      expect(refreshed.status).toBe(400);
      expect((await refreshed.json()).error).toBe('invalid_grant');
      expect((await whoami(client)).agent_id).toBe(agent.agent_id);
    } finally {
      await client.close();
    }
  });

  it("refuses a token of one MCP server at another (aud), and the MCP client's bare call without one", async () => {
    const { sdk } = await newAgent();
    const { client, provider } = await connectAsAgent(mcp.url, sdk, await registeredClient());
    try {
      const { access_token } = (await provider.tokens())!;
      expect((await fetch(mcp.url, { method: 'POST', headers: { authorization: `Bearer ${access_token}` } })).status).not.toBe(401);
      const elsewhere = await fetch(other.url, { method: 'POST', headers: { authorization: `Bearer ${access_token}` } });
      expect(elsewhere.status).toBe(401);
      expect(elsewhere.headers.get('www-authenticate')).toMatch(
        /^Bearer error="invalid_token", error_description="[^"]*aud[^"]*", resource_metadata="/,
      );
      const bare = await fetch(other.url, { method: 'POST' });
      expect(bare.status).toBe(401);
      expect(bare.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${new URL(other.url).origin}/.well-known/oauth-protected-resource/mcp"`,
      );
    } finally {
      await client.close();
    }
  });
});
