import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * The example agent runs as a process of its own, trusting the test's CA through NODE_EXTRA_CA_CERTS
 * as any agent would trust its deployment's.
 */
describe(`an MCP client is the agent's own client-metadata document (${storeName})`, { timeout: 120_000 }, () => {
  let certs: TestCertificates;
  let server: TestServer;
  let front: Listening;
  let mcp: RunningMcpExample;
  let issuer: string;
  let dir: string;

  beforeAll(async () => {
    certs = testCertificates();
    const port = await freePort();
    issuer = `https://localhost:${port}`;
    server = await startTestServer({ ISSUER: issuer });
    const plain = await server.app.listen({ port: 0, host: '127.0.0.1' });
    front = await startTlsTerminator(certs, Number(new URL(plain).port), port);
    // The MCP server reads the keys from the plain listener: this test process does not trust the test CA.
    mcp = await startMcpExample({ issuer, jwksUri: `${plain}/.well-known/jwks.json` });
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

  it('calls the tool as the agent, its client_id the agent’s document URL', async () => {
    const agent = await server.createAgent();
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const added = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: publicKey.export({ format: 'jwk' }) });
    expect(added.statusCode).toBe(201);
    const keyFile = join(dir, `${agent.agent_id}.pem`);
    writeFileSync(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });

    const child = spawn(join(repoRoot, 'node_modules/.bin/tsx'), ['examples/mcp-agent/agent.ts'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_EXTRA_CA_CERTS: certs.caFile,
        MCP_URL: mcp.url,
        AGENT_AUTH_URL: issuer,
        AGENT_ID: agent.agent_id,
        AGENT_KEY_FILE: keyFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = await finished(child);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      agent_id: agent.agent_id,
      owner_email: agent.email,
      client_id: `${issuer}/agents/${agent.agent_id}/client-metadata.json`,
    });
  });
});
