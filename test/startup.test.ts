import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { type RunningServer, startServer } from '../src/server.js';
import { createTestDatabase, seedPgliteDir, storeName, type TestDatabase, usingPostgres } from './helpers/database.js';
import { finished, spawnBuilt, startServerProcess } from './helpers/process.js';

const ADMIN_TOKEN = 'startup-test-admin-token-0123456789';
const TABLES = [
  'agents',
  'auth_codes',
  'auth_requests',
  'clients',
  'grants',
  'refresh_tokens',
  'revoked_access_tokens',
  'schema_migrations',
  'server_keys',
  'users',
];

const tempDirs: string[] = [];
const databases: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(databases.map((d) => d.drop()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * An empty store of the kind under test, as server environment: a fresh PostgreSQL schema,
 * or a fresh directory for PGlite on disk.
 */
async function emptyStore(): Promise<Record<string, string | undefined>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-auth-startup-'));
  tempDirs.push(dataDir);
  if (!usingPostgres) return { DATA_DIR: dataDir };
  const database = await createTestDatabase();
  databases.push(database);
  return { DATA_DIR: dataDir, DATABASE_URL: database.url };
}

/**
 * A store for a test whose subject is not the first start: on PostgreSQL an empty schema as before, for PGlite
 * a directory seeded from the migrated template (a first start's initdb costs seconds of CPU).
 */
async function migratedStore(): Promise<Record<string, string | undefined>> {
  if (usingPostgres) return emptyStore();
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-auth-startup-'));
  tempDirs.push(dataDir);
  await seedPgliteDir(join(dataDir, 'pglite'));
  return { DATA_DIR: dataDir };
}

const serverEnv = (store: Record<string, string | undefined>) => ({
  PORT: '0',
  HOST: '127.0.0.1',
  ADMIN_PORT: '0',
  ADMIN_HOST: '127.0.0.1',
  ADMIN_TOKEN,
  LOG_LEVEL: 'silent',
  ...store,
});

describe(`startup (${storeName})`, { timeout: 120_000 }, () => {
  const running: RunningServer[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()));
  });
  async function start(store: Record<string, string | undefined>) {
    const server = await startServer(loadConfig(serverEnv(store)));
    running.push(server);
    return server;
  }
  async function stop(server: RunningServer) {
    running.splice(running.indexOf(server), 1);
    await server.close();
  }
  const admin = (server: RunningServer, method: string, path: string, body?: object) =>
    fetch(`${server.adminUrl}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body && JSON.stringify(body),
    });

  it('creates the schema in an empty store', async () => {
    const server = await start(await emptyStore());
    const { rows } = await server.services.db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(expect.arrayContaining(TABLES));
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it('keeps registrations and the generated JWT key across a restart', async () => {
    const store = await migratedStore();
    const first = await start(store);
    const created = await admin(first, 'POST', '/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    expect(created.status).toBe(201);
    const { client_secret: _, ...client } = await created.json();
    const key = first.services.keyring.current;
    const migrations = (await first.services.db.query('SELECT * FROM schema_migrations')).rows;
    await stop(first);

    const second = await start(store);
    const got = await admin(second, 'GET', `/clients/${client.client_id}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(client);
    expect(second.services.keyring.current.kid).toBe(key.kid);
    expect(Buffer.from(second.services.keyring.current.key).equals(Buffer.from(key.key))).toBe(true);
    // Migrations already applied are not applied again.
    expect((await second.services.db.query('SELECT * FROM schema_migrations')).rows).toEqual(migrations);
  });

  describe('the process (src/main.ts)', () => {
    const bad: [string, string][] = [
      ['PORT', 'abc'],
      ['JWT_SECRET', 'short'],
      ['ADMIN_PORT', '70000'],
      ['DATABASE_URL', 'mysql://localhost/db'],
      ['ACCESS_TOKEN_TTL_SECONDS', '0'],
      ['ISSUER', 'http://auth.example'],
    ];
    it('exits 1 with one line naming the variable on a configuration error', async () => {
      const results = await Promise.all(bad.map(([name, value]) => finished(spawnBuilt('main', [], { DATA_DIR: 'memory', [name]: value }))));
      results.forEach((res, i) => {
        const [name] = bad[i];
        expect(res.code, name).toBe(1);
        expect(res.stdout, name).toBe('');
        expect(res.stderr, name).toMatch(new RegExp(`^agent-auth: invalid configuration: ${name} [^\\n]+\\n$`));
      });
    });

    it('refuses DATA_DIR=memory without ADMIN_TOKEN: a generated token would be kept nowhere', async () => {
      const res = await finished(spawnBuilt('main', [], { DATA_DIR: 'memory', PORT: '0', ADMIN_PORT: '0' }));
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^agent-auth: invalid configuration: ADMIN_TOKEN must be set with DATA_DIR=memory[^\n]*\n$/);
    });

    it('serves without a warning on stderr, then exits 0 within 10 s of SIGTERM', async () => {
      const store = await migratedStore();
      const { child, exit, url } = await startServerProcess({ ...serverEnv(store), LOG_LEVEL: 'warn' });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      // Statements on several pool connections at once (each first LISTENs for the grant cache).
      const ready = await Promise.all(Array.from({ length: 5 }, () => fetch(`${url}/readyz`)));
      expect(ready.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);

      const sent = Date.now();
      child.kill('SIGTERM');
      const res = await exit;
      expect(Date.now() - sent).toBeLessThan(10_000);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('SIGTERM received');
      // Node's warnings (a deprecated use of a library, say) go to stderr, which operators watch.
      expect(res.stderr).toBe('');
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    });

    it('starts in OpenID Connect mode with ES256 without a warning: websites without a choice get RS256 anyway', async () => {
      const store = await migratedStore();
      const { child, exit } = await startServerProcess({ ...serverEnv(store), LOG_LEVEL: 'warn', ID_TOKEN_SIGNING_ALG: 'ES256' });
      child.kill('SIGTERM');
      const res = await exit;
      expect(res.code).toBe(0);
      expect(res.stderr).toBe('');
    });

    it('on SIGTERM with SHUTDOWN_DELAY_SECONDS, turns /readyz to 503 at once, keeps serving kept-alive connections, then exits 0', async () => {
      const store = await migratedStore();
      const { child, exit, url } = await startServerProcess({ ...serverEnv(store), LOG_LEVEL: 'warn', SHUTDOWN_DELAY_SECONDS: '2' });
      // Two connections kept alive, as a load balancer or a busy client holds them.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
      const get = (path: string) =>
        new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
          const req = http.get(`${url}${path}`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, reused: req.reusedSocket }));
          });
          req.on('error', reject);
        });
      expect((await Promise.all([get('/readyz'), get('/healthz')])).map((r) => r.status)).toEqual([200, 200]);

      const signalled = new Promise<void>((resolve) => child.stdout!.on('data', (d) => String(d).includes('SIGTERM received') && resolve()));
      const sent = Date.now();
      child.kill('SIGTERM');
      await signalled;
      const [ready, metadata] = await Promise.all([get('/readyz'), get('/.well-known/oauth-authorization-server')]);
      expect(ready).toEqual({ status: 503, reused: true });
      expect(metadata).toEqual({ status: 200, reused: true });
      // Still serving on new connections during the delay too, so that nothing in flight at the balancer is refused.
      expect((await get('/healthz')).status).toBe(200);

      const res = await exit;
      agent.destroy();
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('not ready; draining in 2 s');
      expect(Date.now() - sent).toBeLessThan(12_000);
    });

    it('answers a request that arrives while the listener closes with our 503 and Retry-After, not Fastify’s own', async () => {
      const store = await migratedStore();
      const { child, exit, url } = await startServerProcess({ ...serverEnv(store), LOG_LEVEL: 'warn' });
      const port = Number(new URL(url).port);
      const socket = net.connect(port, '127.0.0.1');
      await once(socket, 'connect');
      let answer = '';
      socket.on('data', (d) => (answer += d));
      const ended = once(socket, 'close');
      // Half a request: the connection is busy, so the listener's close waits for it.
      socket.write('GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: localhost\r\n');
      await new Promise((resolve) => setTimeout(resolve, 200));
      child.kill('SIGTERM');
      // The listener is closing once it refuses new connections; the rest of the request arrives after that.
      const refused = () =>
        new Promise<boolean>((resolve) => {
          const probe = net.connect(port, '127.0.0.1');
          probe.on('connect', () => (probe.destroy(), resolve(false)));
          probe.on('error', () => resolve(true));
        });
      for (let i = 0; i < 100 && !(await refused()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      socket.write('\r\n');
      await ended;
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 503 /);
      expect(head).toMatch(/^retry-after: 5$/im);
      expect(head).toMatch(/^connection: close$/im);
      expect(JSON.parse(body)).toEqual({ error: 'temporarily_unavailable', error_description: 'the server is shutting down; try again' });
      expect((await exit).code).toBe(0);
    });

    // Two processes writing one embedded store lose each other's writes.
    it.runIf(!usingPostgres)(
      'refuses a second process on the same DATA_DIR, naming it and the holder, and takes over the lock of a dead one',
      async () => {
        const { DATA_DIR: dataDir } = (await migratedStore()) as { DATA_DIR: string };
        const first = await startServerProcess(serverEnv({ DATA_DIR: dataDir }));
        const secondChild = spawnBuilt('main', [], serverEnv({ DATA_DIR: dataDir }));
        // A second process that starts serving would never exit by itself.
        const stopUnrefused = setTimeout(() => secondChild.kill('SIGKILL'), 30_000);
        const second = await finished(secondChild);
        clearTimeout(stopUnrefused);
        expect(second.code).toBe(1);
        expect(second.stderr).toBe(
          `agent-auth: failed to start: DATA_DIR ${dataDir} is in use by another agent-auth process (pid ${first.child.pid}); stop it, or use DATABASE_URL to run several\n`,
        );
        first.child.kill('SIGTERM');
        expect((await first.exit).code).toBe(0);
        expect(existsSync(join(dataDir, 'agent-auth.lock'))).toBe(false);

        // A holder killed without a chance to clean up leaves its lock behind; the next start takes it over.
        const dead = spawn(process.execPath, ['-e', '']);
        await finished(dead);
        writeFileSync(join(dataDir, 'agent-auth.lock'), `${dead.pid}\n`);
        const third = await startServerProcess(serverEnv({ DATA_DIR: dataDir }));
        expect(readFileSync(join(dataDir, 'agent-auth.lock'), 'utf8')).toBe(`${third.child.pid}\n`);
        third.child.kill('SIGTERM');
        expect(await third.exit).toMatchObject({ code: 0 });
      },
    );

    it.runIf(usingPostgres)('lets several processes share a DATA_DIR over PostgreSQL: the store is not in it', async () => {
      const store = await emptyStore();
      const first = await startServerProcess(serverEnv(store));
      const second = await startServerProcess(serverEnv(store));
      for (const { child, exit } of [first, second]) {
        child.kill('SIGTERM');
        expect((await exit).code).toBe(0);
      }
    });

    it('answers a held long poll at once on SIGTERM, then exits 0 within 10 s', async () => {
      const store = await migratedStore();
      const { child, exit, url, adminUrl } = await startServerProcess({ ...serverEnv(store), LOG_LEVEL: 'warn' });
      const created = await fetch(`${adminUrl}/admin/clients`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Shop', redirect_uris: ['https://shop.example/cb'] }),
      });
      const { client_id } = await created.json();
      const page = await fetch(
        `${url}/authorize?${new URLSearchParams({
          client_id,
          redirect_uri: 'https://shop.example/cb',
          response_type: 'code',
          state: 'st',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        })}`,
      );
      const requestId = /<meta name="request-id" content="([^"]+)">/.exec(await page.text())![1];

      // What every open sign-in page holds: a long poll of up to 25 s.
      const poll = fetch(`${url}/api/check-status?request_id=${requestId}&wait=25&last_status=pending`);
      await new Promise((r) => setTimeout(r, 300));
      const sent = Date.now();
      child.kill('SIGTERM');
      const answer = await poll;
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ status: 'pending' });
      const res = await exit;
      expect(res.code).toBe(0);
      expect(Date.now() - sent).toBeLessThan(10_000);
    });
  });
});
