import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signRequest } from '@agent-auth/agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verify } from 'web-bot-auth';
import { verifierFromJWK } from 'web-bot-auth/crypto';
import { startLocalServer } from '../helpers/listening.js';
import { finished, spawnBuilt } from '../helpers/process.js';

const ADMIN_TOKEN = 'cli-signing-keys-admin-token-0123456789';

// Every CLI call is a fresh node process: give a busy machine room.
describe('agent-auth agents signing-keys', { timeout: 120_000 }, () => {
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  let dir: string;
  let agentId: string;

  beforeAll(async () => {
    local = await startLocalServer({ ADMIN_TOKEN });
    dir = mkdtempSync(join(tmpdir(), 'signing-keys-cli-'));
    const res = await fetch(`${local.server.adminUrl}/admin/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'signer@example.com' }),
    });
    agentId = (await res.json()).agent_id;
  });
  afterAll(async () => {
    await local?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const cli = (args: string[]) => finished(spawnBuilt('cli', ['--url', local.server.adminUrl, ...args], { ADMIN_TOKEN }));

  it('generates a key whose private JWK goes to a 0600 file, never printed; the directory serves it; list and remove', async () => {
    const out = join(dir, 'signing-key.jwk');
    const added = await cli(['agents', 'signing-keys', 'add', agentId, '--generate', '--out', out]);
    expect(added.code, added.stderr).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const privateJwk = JSON.parse(readFileSync(out, 'utf8'));
    expect(privateJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
    expect(added.stdout + added.stderr).not.toContain(privateJwk.d);
    const kid = /kid\s+(\S+)/.exec(added.stdout)![1];

    // What the agent signs with that file verifies against the directory, as Cloudflare's verifier reads it.
    const directory = await (await fetch(`${local.server.url}/.well-known/http-message-signatures-directory`)).json();
    const served = directory.keys.find((k: { kid: string }) => k.kid === kid);
    const signed = await signRequest(new Request('https://shop.example/'), privateJwk, { issuer: local.server.url });
    await expect(verify(signed, await verifierFromJWK(served))).resolves.toBeUndefined();

    const listed = await cli(['agents', 'signing-keys', 'list', agentId]);
    expect(listed.stdout).toMatch(/^kid\s+alg\s+created_at/);
    expect(listed.stdout).toContain(kid);
    // Only Ed25519: there is no --alg to choose another.
    expect((await cli(['agents', 'signing-keys', 'add', agentId, '--generate', '--alg', 'ES256', '--out', join(dir, 'x')])).code).toBe(1);
    const removed = await cli(['agents', 'signing-keys', 'remove', agentId, kid]);
    expect(removed.stdout.trim()).toBe(`deleted key ${kid}`);
    expect((await cli(['agents', 'signing-keys', 'list', agentId])).stdout).not.toContain(kid);
    expect((await cli(['agents', 'signing-keys', 'remove', agentId, kid])).code).toBe(1);
  });
});
