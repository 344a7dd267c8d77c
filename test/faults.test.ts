import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usingPostgres } from './helpers/database.js';
import { checkStatus, startAuthorize } from './helpers/flow.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTcpProxy } from './helpers/tcp-proxy.js';

// Losing the database is a PostgreSQL matter: the embedded store lives inside the process.
describe.runIf(usingPostgres)('when PostgreSQL goes away (postgres)', () => {
  let server: TestServer;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  const applicationName = `agent-auth-fault-${process.pid}`;

  beforeAll(async () => {
    const target = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    server = await startTestServer({}, {
      rewriteDatabaseUrl: (url) => {
        const u = new URL(url);
        u.port = String(proxy.port);
        u.searchParams.set('application_name', applicationName);
        return u.toString();
      },
    });
    client = await server.createClient();
  });
  afterAll(async () => {
    await proxy.thaw();
    await proxy.start();
    await server.close();
    await proxy.close();
  });

  async function until(fn: () => Promise<boolean>, ms = 15000) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await fn()) return true;
      await new Promise((r) => setTimeout(r, 200));
    }
    return false;
  }

  it('answers 503 with Retry-After while the database refuses connections, then recovers by itself', async () => {
    expect((await server.app.inject('/readyz')).statusCode).toBe(200);
    await proxy.stop();

    const ready = await server.app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    const status = await checkStatus(server, 'req_whatever');
    expect(status.statusCode).toBe(503);
    expect(status.headers['retry-after']).toBeDefined();
    expect(status.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    const page = await startAuthorize(server, client);
    expect(page.res.statusCode).toBe(503);
    expect(page.res.headers['content-type']).toMatch(/^text\/html/);
    expect(page.res.body).not.toMatch(/at .*\.js:\d+/);

    await proxy.start();
    expect(await until(async () => (await server.app.inject('/readyz')).statusCode === 200)).toBe(true);
    expect((await startAuthorize(server, client)).res.statusCode).toBe(200);
  });

  it('answers 503 within a bounded time when the database hangs', async () => {
    proxy.freeze();
    const started = Date.now();
    const res = await checkStatus(server, 'req_whatever');
    const took = Date.now() - started;
    expect(res.statusCode).toBe(503);
    expect(took).toBeLessThan(16000);
    await proxy.thaw();
    expect(await until(async () => (await server.app.inject('/readyz')).statusCode === 200)).toBe(true);
  }, 40000);

  it('survives its connections being terminated by the server (pg_terminate_backend)', async () => {
    expect((await startAuthorize(server, client)).res.statusCode).toBe(200);
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    const { rows } = await admin.query(
      'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    await admin.end();
    expect(rows[0].n).toBeGreaterThan(0);

    const codes: number[] = [];
    for (let i = 0; i < 5; i++) codes.push((await startAuthorize(server, client)).res.statusCode);
    // at worst a request that held a dead connection is told to retry; never a 500
    expect(codes.every((c) => c === 200 || c === 503)).toBe(true);
    expect(codes.at(-1)).toBe(200);
  });
});
