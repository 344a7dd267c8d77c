import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../src/server.js';
import { insertCode } from './helpers/codes.js';
import { storeName } from './helpers/database.js';
import { startLocalServer } from './helpers/listening.js';
import { finished, spawnBuilt } from './helpers/process.js';

const hash = (secret: string) => createHash('sha256').update(secret).digest('base64url');

// Every CLI call is a fresh node process compiling TypeScript: give a busy machine room.
describe(`agent-auth CLI against a running server (${storeName})`, { timeout: 120_000 }, () => {
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  let server: RunningServer;
  let dataDir: string;
  let token: string;

  beforeAll(async () => {
    // No ADMIN_TOKEN: the server generates one under DATA_DIR, where the CLI finds it.
    local = await startLocalServer();
    ({ server, dataDir } = local);
    token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  });
  afterAll(() => local?.stop());

  /** Runs `agent-auth` against the test server; `--url` and `ADMIN_TOKEN` unless the test says otherwise. */
  function cli(args: string[], env: Record<string, string | undefined> = { ADMIN_TOKEN: token }, url = true) {
    return finished(spawnBuilt('cli', url ? ['--url', server.adminUrl, ...args] : args, env));
  }
  async function cliJson(args: string[]) {
    const res = await cli(['--json', ...args]);
    expect(res.stderr.replace(/^note: .*\n/m, ''), res.stderr).toBe('');
    expect(res.code).toBe(0);
    return JSON.parse(res.stdout);
  }
  const storedClient = async (id: string) =>
    (await server.services.db.query<{ active: boolean; secret_hash: string }>('SELECT * FROM clients WHERE id = $1', [id])).rows[0];

  it('generated the admin token file with mode 0600', () => {
    expect(token).toMatch(/^aa_admin_/);
    expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600);
  });

  it('creates, lists, updates, deactivates, rotates and deletes a client', async () => {
    const created = await cliJson([
      'clients',
      'create',
      '--name',
      'Shop',
      '--redirect-uri',
      'https://shop.example/cb',
      '--redirect-uri',
      'http://localhost:8080/cb',
    ]);
    expect(created).toMatchObject({
      name: 'Shop',
      redirect_uris: ['https://shop.example/cb', 'http://localhost:8080/cb'],
      active: true,
    });
    const id: string = created.client_id;
    expect((await storedClient(id)).secret_hash).toBe(hash(created.client_secret));

    const list = await cliJson(['clients', 'list']);
    expect(list.clients.map((c: { client_id: string }) => c.client_id)).toContain(id);

    // The readable table names the client without any secret.
    const table = await cli(['clients', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^client_id\\s+name\\s+active\\s+redirect_uris$`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+Shop\\s+true\\s+https://shop.example/cb, http://localhost:8080/cb$`, 'm'));
    expect(table.stdout).not.toContain(created.client_secret);

    const updated = await cliJson(['clients', 'update', id, '--name', 'Shop 2', '--redirect-uri', 'https://shop.example/v2']);
    expect(updated).toMatchObject({ client_id: id, name: 'Shop 2', redirect_uris: ['https://shop.example/v2'], active: true });

    expect((await cliJson(['clients', 'deactivate', id])).active).toBe(false);
    expect((await storedClient(id)).active).toBe(false);
    expect((await cliJson(['clients', 'activate', id])).active).toBe(true);
    expect((await cliJson(['clients', 'update', id, '--active', 'false'])).active).toBe(false);

    const rotated = await cliJson(['clients', 'rotate-secret', id]);
    expect(rotated.client_secret).not.toBe(created.client_secret);
    expect((await storedClient(id)).secret_hash).toBe(hash(rotated.client_secret));

    const deleted = await cli(['clients', 'delete', id]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout.trim()).toBe(`deleted client ${id}`);
    expect(await storedClient(id)).toBeUndefined();

    const gone = await cli(['clients', 'get', id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr.trim()).toBe(`error: no client with id ${id}`);
  });

  it('registers an agent, shows the secret once in readable form, and reaches the server via ADMIN_PORT', async () => {
    const res = await cli(
      ['agents', 'create', '--email', 'owner@example.com', '--name', 'Claude'],
      {
        ADMIN_TOKEN: token,
        ADMIN_PORT: new URL(server.adminUrl).port,
      },
      false,
    );
    expect(res.code).toBe(0);
    const fields = Object.fromEntries(
      res.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(/\s{2,}/)),
    );
    expect(fields).toMatchObject({ email: 'owner@example.com', name: 'Claude', active: 'true' });
    expect(fields.agent_id).toMatch(/^agent_/);
    expect(res.stderr).toContain('agent_secret is shown only this once');
    const { rows } = await server.services.db.query<{ secret_hash: string }>('SELECT secret_hash FROM agents WHERE id = $1', [fields.agent_id]);
    expect(rows[0].secret_hash).toBe(hash(fields.agent_secret));

    const got = await cliJson(['agents', 'get', fields.agent_id]);
    expect(got).toEqual({
      agent_id: fields.agent_id,
      email: 'owner@example.com',
      name: 'Claude',
      active: true,
      secret_enabled: true,
      client_id: null,
      kind: 'agent',
      created_at: fields.created_at,
    });
  });

  it("prints a record's ids and secrets as shell lines with --env, which eval takes as they are", async () => {
    const res = await cli(['--env', 'agents', 'create', '--email', 'env@example.com', '--name', "Env's agent"]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^export AGENT_ID='agent_[\w-]+'\nexport AGENT_SECRET='[\w-]+'\n$/);
    const { stdout } = await finished(
      spawn('bash', ['-c', `eval "$1"; echo "$AGENT_ID $AGENT_SECRET"`, 'bash', res.stdout], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    const [agentId, secret] = stdout.trim().split(' ');
    const { rows } = await server.services.db.query<{ secret_hash: string }>('SELECT secret_hash FROM agents WHERE id = $1', [agentId]);
    expect(rows[0].secret_hash).toBe(hash(secret));
  });

  it('prints the server refusal and exits 1, writing nothing', async () => {
    const before = (await server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM clients')).rows[0].n;
    const res = await cli(['clients', 'create', '--name', 'Shop', '--redirect-uri', 'http://shop.example/cb']);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim()).toBe('error: the "redirect_uris.0" field must use https (plain http only on localhost, 127.0.0.1 or [::1])');
    expect((await server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM clients')).rows[0].n).toBe(before);
  });

  it('never prints the admin token, not even as the default in --help', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--token <token>');
    expect(help.stdout).not.toContain(token);
  });

  it('exits 1 on a wrong token, and on a server that is not there', async () => {
    const wrong = await cli(['clients', 'list'], { ADMIN_TOKEN: 'not-the-admin-token' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr.trim()).toBe('error: missing or invalid admin token');

    const away = await cli(['--url', 'http://127.0.0.1:9', 'clients', 'list'], { ADMIN_TOKEN: token }, false);
    expect(away.code).toBe(1);
    expect(away.stderr.trim()).toMatch(/^error: cannot reach the admin API at http:\/\/127\.0\.0\.1:9/);
    // It says how to point it at the right listener.
    expect(away.stderr).toContain('--url, AGENT_AUTH_ADMIN_URL or ADMIN_PORT');
  });

  it('reads the token from $DATA_DIR/admin-token when ADMIN_TOKEN is unset', async () => {
    const res = await cli(['--json', 'agents', 'list'], { DATA_DIR: dataDir });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout).agents.map((a: { email: string }) => a.email)).toContain('owner@example.com');

    const elsewhere = await cli(['agents', 'list'], { DATA_DIR: join(dataDir, 'nowhere') });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(/^error: no admin token/);
  });
});

describe(`agent-auth CLI: sign-in history, revocation and audit (${storeName})`, { timeout: 120_000 }, () => {
  const adminToken = 'cli-history-admin-token-0123456789';
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  let server: RunningServer;

  beforeAll(async () => {
    local = await startLocalServer({ ADMIN_TOKEN: adminToken });
    ({ server } = local);
  });
  afterAll(() => local?.stop());

  const cli = (args: string[]) => finished(spawnBuilt('cli', ['--url', server.adminUrl, ...args], { ADMIN_TOKEN: adminToken }));
  async function cliJson(args: string[]) {
    const res = await cli(['--json', ...args]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    return JSON.parse(res.stdout);
  }
  async function admin(method: string, path: string, body?: object) {
    const res = await fetch(`${server.adminUrl}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return res.json();
  }
  /** A sign-in up to its tokens: a code as the flow leaves it, exchanged over HTTP. */
  async function signIn(client: { client_id: string; client_secret: string }, agentId: string, model: string) {
    const { code, verifier } = await insertCode(server.services, {
      clientId: client.client_id,
      agentId,
      redirectUri: 'https://shop.example/cb',
      model,
    });
    const res = await fetch(`${server.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: 'https://shop.example/cb',
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    });
    expect(res.status).toBe(200);
  }
  const reasons = async (agentId: string) =>
    (
      await server.services.db.query<{ revoked_reason: string | null }>('SELECT revoked_reason FROM grants WHERE agent_id = $1 ORDER BY created_at', [
        agentId,
      ])
    ).rows.map((r) => r.revoked_reason);

  it('lists grants by agent, user and website, and reads the audit log page by page', async () => {
    const shop = await admin('POST', '/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    const agent = await admin('POST', '/agents', { email: 'history@example.com', name: 'Claude' });
    await signIn(shop, agent.agent_id, 'model-one');
    await signIn(shop, agent.agent_id, 'model-two');

    const grants = await cliJson(['agents', 'grants', agent.agent_id]);
    expect(grants.grants.map((g: { model: string }) => g.model)).toEqual(['model-two', 'model-one']);
    expect(grants.grants[0]).toMatchObject({ client_id: shop.client_id, client_name: 'Shop', active: true, revoked_at: null });

    const table = await cli(['agents', 'grants', agent.agent_id]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^grant_id\s+agent_id\s+client_name\s+model\s+active\s+created_at\s+last_refreshed_at\s+revoked_reason$/m);
    expect(table.stdout).toMatch(new RegExp(`^grant_\\S+\\s+${agent.agent_id}\\s+Shop\\s+model-one\\s+true\\s+\\S+\\s+-\\s+-$`, 'm'));

    const atShop = await cliJson(['clients', 'agents', shop.client_id]);
    expect(atShop.agents).toEqual([
      expect.objectContaining({ agent_id: agent.agent_id, email: 'history@example.com', models: ['model-one', 'model-two'], grants: 2 }),
    ]);

    const user = await cli(['users', 'show', 'HISTORY@example.com']);
    expect(user.code).toBe(0);
    expect(user.stdout).toMatch(/^email {2}history@example\.com$/m);
    expect(user.stdout).toMatch(new RegExp(`^${agent.agent_id}\\s+Claude\\s+true\\s+\\S+$`, 'm'));
    expect(user.stdout.match(/model-(one|two)/g)).toHaveLength(2);

    const all = await cliJson(['audit', '--agent', agent.agent_id]);
    // Each sign-in's steps, newest first (the fixture goes through the store's own steps), after the operator's
    // registration of the agent (an admin action).
    const signInSteps = ['token_issued', 'completed', 'agent_authenticated'];
    expect(all.events.map((e: { event: string }) => e.event)).toEqual([...signInSteps, ...signInSteps, 'agent_created']);
    const page = await cli(['audit', '--client', shop.client_id, '--event', 'token_issued', '--limit', '1']);
    expect(page.code).toBe(0);
    expect(page.stdout).toMatch(
      new RegExp(`^${all.events[0].id}\\s+\\S+\\s+token_issued\\s+-\\s+${agent.agent_id}\\s+${shop.client_id}\\s+model-two\\s+-$`, 'm'),
    );
    expect(page.stderr.trim()).toBe(`more: --cursor ${all.events[0].id}`);
    // Who acted: the operator registered the agent, and it is all the operator did to it.
    const created = await cli(['audit', '--agent', agent.agent_id, '--actor', 'admin']);
    expect(created.stdout).toMatch(/^id\s+at\s+event\s+actor\s+agent_id\s+client_id\s+model\s+reason$/m);
    expect(created.stdout).toMatch(new RegExp(`^\\d+\\s+\\S+\\s+agent_created\\s+admin\\s+${agent.agent_id}\\s+-\\s+-\\s+-$`, 'm'));
    const next = await cliJson(['audit', '--client', shop.client_id, '--limit', '1', '--cursor', String(all.events[0].id), '--since', '2000-01-01']);
    expect(next.events.map((e: { id: number }) => e.id)).toEqual([all.events[1].id]);
  });

  it('rotate-secret ends the grants too, unless --no-revoke-grants; it says which on stderr', async () => {
    const shop = await admin('POST', '/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    const agent = await admin('POST', '/agents', { email: 'rotator@example.com' });
    await signIn(shop, agent.agent_id, 'm');
    const kept = await cli(['agents', 'rotate-secret', agent.agent_id, '--no-revoke-grants']);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stderr).toContain('note: only the old secret no longer works; tokens already issued keep working');
    expect(await reasons(agent.agent_id)).toEqual([null]);
    const rotated = await cliJson(['clients', 'rotate-secret', shop.client_id]);
    expect(rotated.client_secret).not.toBe(shop.client_secret);
    expect(await reasons(agent.agent_id)).toEqual(['admin_client']);
  });

  it('revokes at every level and reports how many grants went', async () => {
    const shop = await admin('POST', '/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    const [a, b, c] = [
      await admin('POST', '/agents', { email: 'revoker@example.com' }),
      await admin('POST', '/agents', { email: 'revoker@example.com' }),
      await admin('POST', '/agents', { email: 'someone-else@example.com' }),
    ];
    for (const agent of [a, a, b, c]) await signIn(shop, agent.agent_id, 'm');

    const [first] = (await admin('GET', `/agents/${a.agent_id}/grants`)).grants;
    const one = await cli(['grants', 'revoke', first.grant_id]);
    expect(one.code).toBe(0);
    expect(one.stdout.trim()).toBe('revoked 1 grant');
    expect(await cliJson(['agents', 'revoke-grants', a.agent_id])).toEqual({ revoked: 1 });
    expect((await cli(['users', 'revoke-grants', 'revoker@example.com'])).stdout.trim()).toBe('revoked 1 grant');
    expect(await cliJson(['clients', 'revoke-grants', shop.client_id])).toEqual({ revoked: 1 });
    expect(await reasons(a.agent_id)).toEqual(expect.arrayContaining(['admin_grant', 'admin_agent']));
    expect(await reasons(b.agent_id)).toEqual(['admin_user']);
    expect(await reasons(c.agent_id)).toEqual(['admin_client']);

    const revoked = await cliJson(['audit', '--event', 'revoked', '--client', shop.client_id]);
    expect(revoked.events.map((e: { reason: string }) => e.reason).sort()).toEqual(['admin_agent', 'admin_client', 'admin_grant', 'admin_user']);
  });

  it('escapes control and format characters in everything it prints, so no row can be forged', async () => {
    const shop = await admin('POST', '/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    // Rows written before names and models were checked, or by hand: the CLI must not trust them.
    const hostile = 'm\u001b[2K\r\n999  2026-01-01  revoked  agent_x\u202e\u200b\u0085';
    await server.services.db.query(
      `INSERT INTO audit_events (event, agent_id, client_id, model, reason) VALUES ('agent_authentication_failed', $1, $2, $3, $3)`,
      ['agent_hostile', shop.client_id, hostile],
    );
    await server.services.db.query('UPDATE clients SET name = $1 WHERE id = $2', [hostile, shop.client_id]);
    const outputs = [
      await cli(['audit', '--agent', 'agent_hostile']),
      await cli(['--json', 'audit', '--agent', 'agent_hostile']),
      await cli(['clients', 'get', shop.client_id]),
      await cli(['--json', 'clients', 'get', shop.client_id]),
      await cli(['clients', 'list']),
    ];
    for (const { code, stdout } of outputs) {
      expect(code).toBe(0);
      // JSON escapes CR and LF its own way; the readable form writes them as \u000d\u000a.
      expect(stdout).toMatch(/m\\u001b\[2K(\\u000d\\u000a|\\r\\n)999/);
      expect(stdout).toContain('agent_x\\u202e\\u200b\\u0085');
      expect(stdout.replace(/\n/g, '')).not.toMatch(/[\p{Cc}\p{Cf}]/u);
      expect(stdout).not.toMatch(/^999 /m);
    }
    expect(JSON.parse(outputs[1].stdout).events[0].model).toBe(hostile);
  });

  it('prints the server refusal for unknown ids and bad filters, exiting 1', async () => {
    const unknown = await cli(['grants', 'revoke', 'grant_nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('error: no grant with id grant_nope');
    const nobody = await cli(['users', 'show', 'nobody@example.com']);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr.trim()).toBe('error: no user with email nobody@example.com');
    // The CLI checks its own flags first and names them, with the format it expects.
    const bad = await cli(['audit', '--since', 'yesterday']);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe(
      "error: option '--since <date>' argument 'yesterday' is invalid. expected an ISO 8601 date, e.g. 2025-01-31 or 2025-01-31T12:00:00Z",
    );
    const tooMany = await cli(['audit', '--limit', '500']);
    expect(tooMany.code).toBe(1);
    expect(tooMany.stderr.trim()).toBe("error: option '--limit <n>' argument '500' is invalid. expected a whole number from 1 to 200");
  });

  it('prints its version', async () => {
    const res = await finished(spawnBuilt('cli', ['--version']));
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
  });
});

describe(`agent-auth keys (${storeName})`, { timeout: 120_000 }, () => {
  const adminToken = 'cli-keys-admin-token-0123456789';
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  beforeAll(async () => {
    local = await startLocalServer({ ADMIN_TOKEN: adminToken, ID_TOKEN_SIGNING_ALG: 'ES256' });
  });
  afterAll(() => local?.stop());

  it('lists the ID token signing keys and rotates them; the old key stays published', async () => {
    const { server } = local;
    const cli = (args: string[]) => finished(spawnBuilt('cli', ['--url', server.adminUrl, ...args], { ADMIN_TOKEN: adminToken }));
    // The ES256 keys in the JWKS (one current key per algorithm is published, RS256 first).
    const jwks = async () =>
      ((await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string; alg: string }[] }).keys
        .filter((k) => k.alg === 'ES256')
        .map((k) => k.kid);
    const [first] = await jwks();

    const listed = await cli(['keys', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(first);
    const rotated = await cli(['--json', 'keys', 'rotate']);
    expect(rotated.code, rotated.stderr).toBe(0);
    const { current: currentKeys, alg } = JSON.parse(rotated.stdout);
    // Websites without a choice get RS256, whatever ID_TOKEN_SIGNING_ALG says.
    expect(alg).toBe('RS256');
    const current = currentKeys.find((k: { alg: string }) => k.alg === 'ES256').kid;
    expect(current).not.toBe(first);
    expect(await jwks()).toEqual([current, first]);
  });

  it('registers a website’s ID token algorithm, logout URI, owner sign-in and DPoP settings, lists failed logout deliveries and retries one', async () => {
    const { server } = local;
    const cli = (args: string[]) => finished(spawnBuilt('cli', ['--url', server.adminUrl, ...args], { ADMIN_TOKEN: adminToken }));
    const created = await cli([
      '--json',
      ...['clients', 'create', '--name', 'Logout shop', '--redirect-uri', 'https://shop.example/cb'],
      ...['--id-token-alg', 'EdDSA', '--backchannel-logout-uri', 'https://shop.example/logout', '--owner-sign-in', 'true'],
      ...['--dpop-bound', 'true', '--dpop-nonce', 'true'],
    ]);
    expect(created.code, created.stderr).toBe(0);
    const client = JSON.parse(created.stdout);
    expect(client).toMatchObject({
      id_token_signed_response_alg: 'EdDSA',
      backchannel_logout_uri: 'https://shop.example/logout',
      owner_sign_in: true,
      dpop_bound_access_tokens: true,
      dpop_nonce_required: true,
    });
    const cleared = await cli([
      ...['--json', 'clients', 'update', client.client_id, '--id-token-alg', 'default', '--backchannel-logout-uri', 'none'],
      ...['--dpop-bound', 'false', '--dpop-nonce', 'false'],
    ]);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(JSON.parse(cleared.stdout)).toMatchObject({
      id_token_signed_response_alg: 'RS256',
      backchannel_logout_uri: null,
      dpop_bound_access_tokens: false,
      dpop_nonce_required: false,
    });

    // A delivery given up after an hour of refusals, as the sender leaves it.
    await server.services.db.query(
      `INSERT INTO logout_deliveries (jti, client_id, agent_id, sid, uri, reason, status, attempts, last_error)
       VALUES ('jti-cli-1', $1, 'agent_x', 'grant_x', 'https://shop.example/logout', 'admin_agent', 'failed', 12, 'answered 500')`,
      [client.client_id],
    );
    const failed = await cli(['logout-deliveries', 'failed']);
    expect(failed.code, failed.stderr).toBe(0);
    expect(failed.stdout).toMatch(/jti-cli-1 .*answered 500/);
    const retried = await cli(['logout-deliveries', 'retry', 'jti-cli-1']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain('pending again');
    const again = await cli(['logout-deliveries', 'retry', 'jti-cli-1']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no failed logout delivery');
  });
});
