import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { protectedResource } from '@agent-auth/website/mcp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMcpExample, startMcpExample } from '../../examples/mcp-server/server.js';
import { storeName } from '../helpers/database.js';
import { freePort } from '../helpers/listening.js';
import { finished, repoRoot } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { type Listening, startTlsTerminator, type TestCertificates, testCertificates } from '../helpers/tls.js';

/**
 * An agent that signs with a key, on an agent-auth served over https: the official MCP client names
 * the agent's own Client ID Metadata Document as its client_id and authenticates with private_key_jwt.
 * The agents run as processes of their own, trusting the test's CA (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE)
 * as any agent would trust its deployment's; the Python one through sign_in_for_resource.
 */
describe(`an MCP client is the agent's own client-metadata document (${storeName})`, { timeout: 120_000 }, () => {
  let certs: TestCertificates;
  let server: TestServer;
  let front: Listening;
  let mcp: RunningMcpExample;
  let issuer: string;
  let dir: string;
  let jwksUri: string;

  beforeAll(async () => {
    certs = testCertificates();
    const port = await freePort();
    issuer = `https://localhost:${port}`;
    // Nonces demanded of every DPoP proof (RFC 9449 §8): an agent that binds its tokens meets a refusal first.
    server = await startTestServer({ ISSUER: issuer, DPOP_NONCE: 'on' });
    const plain = await server.app.listen({ port: 0, host: '127.0.0.1' });
    front = await startTlsTerminator(certs, Number(new URL(plain).port), port);
    // The MCP server reads the keys from the plain listener: this test process does not trust the test CA.
    jwksUri = `${plain}/.well-known/jwks.json`;
    mcp = await startMcpExample({ issuer, jwksUri });
    expect((await server.adminCall('POST', '/admin/resources', { resource: mcp.url, name: 'Example MCP', scopes: ['email'] })).statusCode).toBe(201);
    dir = mkdtempSync(join(tmpdir(), 'agent-auth-mcp-key-'));
  });
  afterAll(async () => {
    await mcp?.close();
    await front?.close();
    await server?.close();
    certs?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A new agent with an Ed25519 key registered, its private key in a file of mode 0600. */
  async function agentWithKey() {
    const agent = await server.createAgent();
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const added = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: publicKey.export({ format: 'jwk' }) });
    expect(added.statusCode).toBe(201);
    const keyFile = join(dir, `${agent.agent_id}.pem`);
    writeFileSync(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    return { ...agent, keyFile, documentUrl: `${issuer}/agents/${agent.agent_id}/client-metadata.json` };
  }

  /** A process of its own, with a clean environment plus `env`, trusting the test's CA as its deployment's. */
  function run(command: string, args: string[], env: Record<string, string>) {
    const child = spawn(command, args, {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_EXTRA_CA_CERTS: certs.caFile, SSL_CERT_FILE: certs.caFile, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return finished(child);
  }

  /** The example agent (TypeScript) run with a new agent's key: it calls the tool as the agent, its client_id the agent's document. */
  async function exampleAgentCallsTheTool(env: Record<string, string> = {}) {
    const agent = await agentWithKey();
    const done = await run(join(repoRoot, 'node_modules/.bin/tsx'), ['examples/mcp-agent/agent.ts'], {
      MCP_URL: mcp.url,
      AGENT_AUTH_URL: issuer,
      AGENT_ID: agent.agent_id,
      AGENT_KEY_FILE: agent.keyFile,
      ...env,
    });
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ agent_id: agent.agent_id, owner_email: agent.email, client_id: agent.documentUrl });
    return agent;
  }

  it('TypeScript: the MCP client calls the tool as the agent, its client_id the agent’s document URL', async () => {
    await exampleAgentCallsTheTool();
  });

  it('TypeScript with DPoP: the token request, refused for a nonce, goes again with a new assertion; the tokens are bound', async () => {
    const agent = await exampleAgentCallsTheTool({ AGENT_DPOP: '1' });
    // The agent's grant holds a DPoP-bound refresh token: its key's thumbprint is kept with it.
    const { rows } = await server.services.db.query<{ jkt: string | null }>('SELECT dpop_jkt AS jkt FROM grants WHERE agent_id = $1', [
      agent.agent_id,
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0].jkt).toMatch(/^[\w-]{43}$/);
  });

  it('Python: sign_in_for_resource returns a token for the resource, issued to the agent’s document', async () => {
    const agent = await agentWithKey();
    const script = [
      'import json, os',
      'from agent_auth import AgentAuthClient, sign_in_for_resource',
      'with open(os.environ["AGENT_KEY_FILE"]) as key:',
      '    agent = AgentAuthClient(os.environ["AGENT_AUTH_URL"], os.environ["AGENT_ID"], model="py-model-1", private_key=key.read())',
      'print(json.dumps(sign_in_for_resource(agent, os.environ["RESOURCE"])))',
    ].join('\n');
    const done = await run(process.env.PYTHON ?? 'python3', ['-c', script], {
      PYTHONPATH: 'sdk/python',
      PYTHONDONTWRITEBYTECODE: '1',
      AGENT_AUTH_URL: issuer,
      AGENT_ID: agent.agent_id,
      AGENT_KEY_FILE: agent.keyFile,
      RESOURCE: mcp.url,
    });
    expect(done.code, done.stderr).toBe(0);
    const tokens = JSON.parse(done.stdout);
    const verified = await protectedResource({ issuer, resource: mcp.url, jwksUri }).verifyToken(tokens.access_token);
    expect(verified).toMatchObject({ agentId: agent.agent_id, clientId: agent.documentUrl, scopes: ['email'], email: agent.email });
  });
});
