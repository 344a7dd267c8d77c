import { execFileSync } from 'node:child_process';
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import { storeName } from '../helpers/database.js';
import { startLocalServer } from '../helpers/listening.js';
import { finished, spawnBuilt } from '../helpers/process.js';

const ADMIN_TOKEN = 'cli-agent-keys-admin-token-0123456789';

// Every CLI call is a fresh node process compiling TypeScript: give a busy machine room.
describe(`agent-auth agents keys (${storeName})`, { timeout: 120_000 }, () => {
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  let server: RunningServer;
  let dir: string;
  let agentId: string;
  let clientId: string;

  beforeAll(async () => {
    local = await startLocalServer({ ADMIN_TOKEN });
    server = local.server;
    dir = mkdtempSync(join(tmpdir(), 'agent-keys-cli-'));
    agentId = (await admin('POST', '/admin/agents', { email: 'keys@example.com' })).agent_id;
    clientId = (await admin('POST', '/admin/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] })).client_id;
  });
  afterAll(async () => {
    await local?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function admin(method: string, path: string, body?: unknown) {
    const res = await fetch(`${server.adminUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return res.status === 204 ? undefined : res.json();
  }
  const cli = (args: string[]) => finished(spawnBuilt('cli', ['--url', server.adminUrl, ...args], { ADMIN_TOKEN }));

  /** A sign-in started at the server, authenticated with an assertion signed by the PEM in `file`. */
  async function signInWith(file: string, kid: string) {
    const query = new URLSearchParams({
      client_id: clientId,
      redirect_uri: 'https://shop.example/cb',
      response_type: 'code',
      state: 's',
      code_challenge: createHash('sha256').update(randomBytes(32)).digest('base64url'),
      code_challenge_method: 'S256',
    });
    const page = await (await fetch(`${server.url}/authorize?${query}`)).text();
    const requestId = /<meta name="request-id" content="([^"]+)">/.exec(page)![1];
    const key = createPrivateKey(readFileSync(file, 'utf8'));
    const iat = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ request_id: requestId, jti: randomUUID() })
      .setProtectedHeader({ alg: key.asymmetricKeyType === 'ed25519' ? 'EdDSA' : 'ES256', kid, typ: 'agent-auth+jwt' })
      .setIssuer(agentId)
      .setSubject(agentId)
      .setAudience(server.services.config.issuer)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 60)
      .sign(key);
    const res = await fetch(`${server.url}/api/agent/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: requestId, agent_id: agentId, agent_assertion: assertion, model: 'm' }),
    });
    return res.status;
  }

  it('generates a key pair, writes the private key with mode 0600 without printing it, and registers the public half', async () => {
    for (const alg of ['EdDSA', 'ES256']) {
      const out = join(dir, `agent-${alg}.pem`);
      const res = await cli(['agents', 'keys', 'add', agentId, '--generate', '--alg', alg, '--out', out]);
      expect(res.code, res.stderr).toBe(0);
      expect(statSync(out).mode & 0o777).toBe(0o600);
      const pem = readFileSync(out, 'utf8');
      expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      const body = pem.split('\n')[1];
      expect(res.stdout + res.stderr).not.toContain(body);
      expect(res.stdout).toMatch(new RegExp(`alg\\s+${alg}`));
      expect(res.stderr).toContain(`the private key is in ${out} (mode 0600)`);
      const kid = /kid\s+(\S+)/.exec(res.stdout)![1];
      expect(await signInWith(out, kid)).toBe(200);
    }
    // Never over an existing file, and nothing registered then.
    const before = (await admin('GET', `/admin/agents/${agentId}/keys`)).keys.length;
    const again = await cli(['agents', 'keys', 'add', agentId, '--generate', '--out', join(dir, 'agent-EdDSA.pem')]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/cannot write the private key .*EEXIST/);
    expect((await admin('GET', `/admin/agents/${agentId}/keys`)).keys).toHaveLength(before);
  });

  it('warns when the private key lands inside a git work tree, and only then', async () => {
    const repo = join(dir, 'checkout');
    mkdirSync(join(repo, '.git', 'objects'), { recursive: true });
    mkdirSync(join(repo, 'keys'));
    const inside = join(repo, 'keys', 'agent-key.pem');
    const res = await cli(['agents', 'keys', 'add', agentId, '--generate', '--out', inside]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain(`warning: ${inside} is inside the git work tree ${repo}: move it out`);
    expect((await cli(['agents', 'keys', 'add', agentId, '--generate', '--out', join(dir, 'outside.pem')])).stderr).not.toContain('warning');
    // In this checkout, the README's file name and the portal's downloads are ignored: git status never offers them.
    for (const name of ['agent-key.pem', 'agent-key-0a1b2c3d.pem']) {
      expect(() => execFileSync('git', ['check-ignore', '-q', name], { cwd: fileURLToPath(new URL('../..', import.meta.url)) }), name).not.toThrow();
    }
  });

  it('removes the private key it wrote when the server refuses the registration', async () => {
    const out = join(dir, 'orphan.pem');
    const res = await cli(['agents', 'keys', 'add', 'agent_nobody', '--generate', '--out', out]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/no agent with id agent_nobody/);
    expect(() => statSync(out)).toThrow();
  });

  it('registers a public JWK file, refuses a private one before sending it, lists and deletes keys', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const publicFile = join(dir, 'public.jwk');
    const privateFile = join(dir, 'private.jwk');
    writeFileSync(publicFile, JSON.stringify({ ...publicKey.export({ format: 'jwk' }), kid: 'from-file' }));
    writeFileSync(privateFile, JSON.stringify(privateKey.export({ format: 'jwk' })));

    const added = await cli(['--json', 'agents', 'keys', 'add', agentId, '--jwk', publicFile]);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ kid: 'from-file', alg: 'EdDSA' });
    const refused = await cli(['agents', 'keys', 'add', agentId, '--jwk', privateFile]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/holds a private key/);
    expect((await cli(['agents', 'keys', 'add', agentId])).stderr).toMatch(/give --jwk FILE, or --generate --out FILE/);

    const listed = await cli(['agents', 'keys', 'list', agentId]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^kid\s+alg\s+created_at\s+last_used_at/);
    expect(listed.stdout).toContain('from-file');
    const deleted = await cli(['agents', 'keys', 'delete', agentId, 'from-file']);
    expect(deleted.stdout.trim()).toBe('deleted key from-file');
    expect((await cli(['agents', 'keys', 'list', agentId])).stdout).not.toContain('from-file');
    expect((await cli(['agents', 'keys', 'delete', agentId, 'from-file'])).code).toBe(1);
  });

  it('makes an agent key-only and back with --secret-enabled', async () => {
    const off = await cli(['--json', 'agents', 'update', agentId, '--secret-enabled', 'false']);
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse(off.stdout).secret_enabled).toBe(false);
    const on = await cli(['--json', 'agents', 'update', agentId, '--secret-enabled', 'true']);
    expect(JSON.parse(on.stdout).secret_enabled).toBe(true);
  });
});
