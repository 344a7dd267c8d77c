import { Writable } from 'node:stream';
import type { LightMyRequestResponse as Response } from 'fastify';
import { decodeJwt } from 'jose';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { loggerOptions } from '../../src/logger.js';
import { codeForClient, exchangeCode, introspect, issueTokens, refresh, revoke, userinfo } from '../helpers/codes.js';
import { schemaUrl, storeName, usingPostgres } from '../helpers/database.js';
import { agentAuthenticate, authenticatedInFlight, checkStatus, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { within } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

type Client = Awaited<ReturnType<TestServer['createClient']>>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What every JSON endpoint answers while the store is unreachable. */
function expectUnavailable(res: Response, what: string) {
  expect(res.statusCode, `${what}: ${res.body}`).toBe(503);
  expect(Number(res.headers['retry-after']), what).toBeGreaterThan(0);
  expect(res.json(), what).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
}

const until = (check: () => Promise<boolean>) => within(15_000, check, 200);

/**
 * One call of every JSON endpoint that needs the store, each prepared while the store is up and
 * each answering 200 when it is, in an order in which none spoils a later one (revoke last).
 */
async function storeCalls(server: TestServer, client: Client): Promise<[string, () => Promise<Response>][]> {
  const tokens = await issueTokens(server, { client });
  const { agent, code, verifier } = await codeForClient(server, client);
  const { requestId } = await startAuthorize(server, client);
  return [
    ['POST /token (authorization_code)', () => exchangeCode(server, client, code, verifier)],
    ['POST /token (refresh_token)', () => refresh(server, client, tokens.refresh_token)],
    [
      'POST /api/agent/authenticate',
      () => agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret }),
    ],
    ['GET /api/check-status', () => checkStatus(server, requestId)],
    ['GET /userinfo', () => userinfo(server, tokens.access_token)],
    ['POST /introspect', () => introspect(server, client, tokens.access_token)],
    ['POST /revoke', () => revoke(server, client, tokens.refresh_token)],
  ];
}

/** The HTML error page /authorize shows while the store is unreachable. */
function expectErrorPage(res: Response) {
  expect(res.statusCode).toBe(503);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.body).not.toMatch(/at .*\.js:\d+/);
}

// Losing the database is a PostgreSQL matter: the embedded store lives inside the process.
describe.runIf(usingPostgres)('when PostgreSQL goes away (postgres)', () => {
  let server: TestServer;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let client: Client;
  const applicationName = `agent-auth-fault-${process.pid}`;
  // The pool gives up on a connection after 5 s and on a query after 10 s (src/db/postgres.ts);
  // the rest is room for a busy machine.
  const HANG_BOUND_MS = 20000;

  beforeAll(async () => {
    const target = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    // Every call reaches the store: what the grant cache answers from memory while it still hears the
    // database is test/cache/grant-cache-network.test.ts's subject.
    server = await startTestServer(
      { GRANT_CACHE_SIZE: '0' },
      {
        rewriteDatabaseUrl: (url) => {
          const u = new URL(url);
          u.port = String(proxy.port);
          u.searchParams.set('application_name', applicationName);
          return u.toString();
        },
      },
    );
    client = await server.createClient();
  });
  afterAll(async () => {
    await proxy.thaw();
    await proxy.start();
    await server.close();
    await proxy.close();
  });

  /** Counts (or terminates) the server's backends that match `where`, straight on the database. */
  async function backends(where: string, terminate = false): Promise<number> {
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    try {
      const { rows } = await admin.query(
        `SELECT count(${terminate ? 'pg_terminate_backend(pid)' : '*'})::int AS n FROM pg_stat_activity WHERE application_name = $1 AND ${where}`,
        [applicationName],
      );
      return rows[0].n;
    } finally {
      await admin.end();
    }
  }
  // The one connection outside the pool that LISTENs (src/db/pg-listener.ts); its last statement was
  // a LISTEN or its heartbeat.
  const LISTENER = `(query LIKE 'LISTEN %' OR query LIKE '%agent_auth_listener_heartbeat')`;

  const ready = async () => (await server.app.inject('/readyz')).statusCode === 200;

  it('answers 503 with Retry-After at every endpoint while the database refuses connections, then recovers by itself', async () => {
    const calls = await storeCalls(server, client);
    expect(await ready()).toBe(true);
    await proxy.stop();

    expect((await server.app.inject('/readyz')).statusCode).toBe(503);
    for (const [what, call] of calls) expectUnavailable(await call(), what);
    expectErrorPage((await startAuthorize(server, client)).res);

    await proxy.start();
    expect(await until(ready)).toBe(true);
    // Nothing was spent while the store was away: the same code, refresh token and request all still work.
    for (const [what, call] of calls) expect((await call()).statusCode, what).toBe(200);
    expect((await startAuthorize(server, client)).res.statusCode).toBe(200);
  });

  it('answers 503 at every endpoint within a bounded time when the database hangs', async () => {
    const calls = await storeCalls(server, client);
    proxy.freeze();
    const timed = async (call: () => Promise<Response>) => {
      const started = Date.now();
      const res = await call();
      return { res, took: Date.now() - started };
    };
    const [page, ...answers] = await Promise.all([
      timed(async () => (await startAuthorize(server, client)).res),
      ...calls.map(([, call]) => timed(call)),
    ]);
    expectErrorPage(page.res);
    expect(page.took).toBeLessThan(HANG_BOUND_MS);
    answers.forEach(({ res, took }, i) => {
      expectUnavailable(res, calls[i][0]);
      expect(took, calls[i][0]).toBeLessThan(HANG_BOUND_MS);
    });

    await proxy.thaw();
    expect(await until(ready)).toBe(true);
    // Only calls that change nothing are repeated: a frozen one may have reached the database.
    for (const [what, call] of calls.filter(([what]) => /userinfo|introspect|check-status/.test(what))) {
      expect((await call()).statusCode, what).toBe(200);
    }
  }, 60000);

  it('says so fast when the database freezes: DATABASE_TIMEOUT_MS for the first statement, then 503 at once until a probe answers', async () => {
    const calls = await storeCalls(server, client);
    proxy.freeze();
    const timed = async (call: () => Promise<{ statusCode: number }>) => {
      const started = Date.now();
      const res = await call();
      return { status: res.statusCode, took: Date.now() - started };
    };
    // The first statement waits out the deadline (3 s by default), with a margin for a busy machine.
    const first = await timed(async () => (await startAuthorize(server, client)).res);
    expect(first.status).toBe(503);
    expect(first.took).toBeLessThan(3000 + 1500);
    // From then on no request queues behind the frozen database.
    for (const [what, call] of calls) {
      const started = Date.now();
      expectUnavailable(await call(), what);
      expect(Date.now() - started, what).toBeLessThan(500);
    }
    await proxy.thaw();
    // The probe answers within seconds, and requests are served again.
    expect(await within(10_000, ready, 200)).toBe(true);
    expect((await startAuthorize(server, client)).res.statusCode).toBe(200);
  }, 60000);

  it('answers every hot path within 2 s while the database is frozen, the wait for a pooled connection included: 503, never 500', async () => {
    // More calls at once than the pool has connections (10), so that most wait in its queue.
    const rounds = await Promise.all([1, 2, 3].map(() => storeCalls(server, client)));
    const hot = rounds.flat().filter(([what]) => !what.startsWith('POST /revoke'));
    const inFlight = await Promise.all([1, 2, 3].map(async () => authenticatedInFlight(server, client, await server.createAgent())));
    const agentOfRequest = await server.createAgent();
    const waiting = await startAuthorize(server, client);
    expect(await ready()).toBe(true);
    proxy.freeze();
    const timed = async (what: string, call: () => Promise<Response>) => {
      const started = Date.now();
      const res = await call();
      return { what, res, took: Date.now() - started };
    };
    const answers = await Promise.all([
      ...hot.map(([what, call]) => timed(what, call)),
      ...[1, 2, 3].map(() => timed('GET /authorize', async () => (await startAuthorize(server, client)).res)),
      ...inFlight.map((started) =>
        timed('GET /authorize/complete', async () => (await completeInBrowser(server, started.requestId, started.cookie)).res),
      ),
      timed('POST /api/agent/authenticate', () =>
        agentAuthenticate(server, { request_id: waiting.requestId, agent_id: agentOfRequest.agent_id, agent_secret: agentOfRequest.agent_secret }),
      ),
    ]);
    expect(answers.length).toBeGreaterThan(20);
    for (const { what, res, took } of answers) {
      expect(res.statusCode, `${what}: ${res.body}`).toBe(503);
      expect(took, what).toBeLessThan(2000);
    }
    await proxy.thaw();
    expect(await within(10_000, ready, 200)).toBe(true);
  }, 60000);

  it('survives its connections being terminated by the server (pg_terminate_backend)', async () => {
    expect((await startAuthorize(server, client)).res.statusCode).toBe(200);
    expect(await backends('true', true)).toBeGreaterThan(0);

    const codes: number[] = [];
    for (let i = 0; i < 5; i++) codes.push((await startAuthorize(server, client)).res.statusCode);
    // at worst a request that held a dead connection is told to retry; never a 500
    expect(codes.every((c) => c === 200 || c === 503)).toBe(true);
    expect(codes.at(-1)).toBe(200);
  });

  it('answers a held long poll after its LISTEN connection is terminated, and later changes wake new long polls', async () => {
    const listening = async () => (await backends(LISTENER)) === 1;
    const longPoll = (requestId: string) => server.app.inject({ url: `/api/check-status?request_id=${requestId}&wait=20&last_status=pending` });
    const agent = await server.createAgent();
    const authenticate = (requestId: string) =>
      agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(await until(listening)).toBe(true);

    const held = await startAuthorize(server, client);
    const poll = longPoll(held.requestId);
    await sleep(300);
    expect(await backends(LISTENER, true)).toBe(1);
    // A change while nobody listens: its notification may be lost; the poll's periodic re-read still sees it.
    expect((await authenticate(held.requestId)).statusCode).toBe(200);
    const res = await poll;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'authenticated' });

    // The listener comes back by itself, and a notification wakes the next long poll again.
    expect(await until(listening)).toBe(true);
    const next = await startAuthorize(server, client);
    const started = Date.now();
    const woken = longPoll(next.requestId);
    await sleep(300);
    expect((await authenticate(next.requestId)).statusCode).toBe(200);
    expect((await woken).json()).toEqual({ status: 'authenticated' });
    // Sooner than the first periodic re-read (5 s after the poll began), so a notification woke it.
    expect(Date.now() - started).toBeLessThan(4500);
  }, 60000);
});

/**
 * PostgreSQL out of connections (SQLSTATE 53300): a role limited to two connections, whose two
 * slots other clients hold, as `max_connections` reached by a crowd of instances would.
 */
describe.runIf(usingPostgres)('when PostgreSQL has no connection slot left (postgres)', () => {
  const role = `aa_limited_${process.pid}_${Date.now().toString(36)}`;
  const schema = role;
  let superuser: pg.Client;
  let server: TestServer;
  let client: Client;
  let logs = '';
  const holders: pg.Client[] = [];

  beforeAll(async () => {
    superuser = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await superuser.connect();
    await superuser.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 2`);
    await superuser.query(`CREATE SCHEMA ${schema} AUTHORIZATION ${role}`);
    const sink = new Writable({ write: (chunk, _encoding, done) => done(void (logs += chunk.toString())) });
    // The server migrates and serves as the limited role, in a schema of its own.
    // Every call reaches the store: what the grant cache answers from memory while it still hears the
    // database is test/cache/grant-cache-network.test.ts's subject.
    server = await startTestServer(
      { GRANT_CACHE_SIZE: '0' },
      {
        rewriteDatabaseUrl: () => {
          const u = new URL(schemaUrl(process.env.TEST_DATABASE_URL!, schema));
          u.username = role;
          u.password = '';
          return u.toString();
        },
        logger: pino(loggerOptions('warn') as pino.LoggerOptions, sink),
      },
    );
    client = await server.createClient();
  });
  afterAll(async () => {
    await Promise.all(holders.map((h) => h.end().catch(() => {})));
    await server?.close();
    await superuser.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, [role]);
    await superuser.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await superuser.query(`DROP ROLE IF EXISTS ${role}`);
    await superuser.end();
  });

  /** Takes both of the role's slots away from the server: its connections end, two others take their place. */
  async function holdEverySlot() {
    const asRole = new URL(process.env.TEST_DATABASE_URL!);
    asRole.username = role;
    for (let attempt = 0; holders.length < 2 && attempt < 20; attempt++) {
      await superuser.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND NOT pid = ANY($2::int[])`, [
        role,
        holders.map((h) => (h as unknown as { processID: number }).processID),
      ]);
      const holder = new pg.Client({ connectionString: asRole.toString() });
      await holder.connect().then(
        () => holders.push(holder),
        () => sleep(50),
      );
    }
    expect(holders).toHaveLength(2);
  }

  it('answers 503 with Retry-After everywhere (readyz too), logs the SQLSTATE without a stack, and recovers', async () => {
    const calls = await storeCalls(server, client);
    expect((await server.app.inject('/readyz')).statusCode).toBe(200);
    await holdEverySlot();

    const ready = await server.app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(Number(ready.headers['retry-after'])).toBeGreaterThan(0);
    for (const [what, call] of calls) expectUnavailable(await call(), what);
    expectErrorPage((await startAuthorize(server, client)).res);

    expect(logs).toContain('"code":"53300"');
    expect(logs).not.toContain('unhandled error');
    expect(logs).not.toMatch(/"stack"/);
    // Nine failures in a row, one warning line.
    expect(logs.split('\n').filter((line) => line.includes('"store unavailable"'))).toHaveLength(1);

    await Promise.all(holders.splice(0).map((h) => h.end()));
    expect(await until(async () => (await server.app.inject('/readyz')).statusCode === 200)).toBe(true);
    // Nothing was spent while the store refused: the same code, refresh token and request all still work.
    for (const [what, call] of calls) expect((await call()).statusCode, what).toBe(200);
  });
});

/**
 * Each grant is one statement (src/store/grants.ts), so it is all written or not at all. Writing
 * the refresh token is its last write; these tests make that write fail and look for leftovers
 * that a grant written in several statements, without a transaction, would leave behind.
 */
describe(`a grant cut off at its last write leaves nothing half-issued (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  /**
   * Runs `fn` while inserting a refresh token fails. On PostgreSQL the statement's own backend is
   * terminated mid-statement, as a crash or a failover would; PGlite has one in-process
   * connection, so there the statement fails with the code PostgreSQL gives that case (57P01).
   */
  async function withRefreshTokenWritesCut<T>(fn: () => Promise<T>): Promise<T> {
    const terminate = usingPostgres ? 'PERFORM pg_terminate_backend(pg_backend_pid());' : '';
    await server.services.db.exec(`
      CREATE FUNCTION cut_off() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${terminate} RAISE EXCEPTION 'cut off' USING ERRCODE = 'admin_shutdown'; END $$;
      CREATE TRIGGER cut_off BEFORE INSERT ON refresh_tokens FOR EACH ROW EXECUTE FUNCTION cut_off();`);
    try {
      return await fn();
    } finally {
      await server.services.db.exec('DROP TRIGGER cut_off ON refresh_tokens; DROP FUNCTION cut_off();');
    }
  }

  it('a code exchange cut off spends no code and writes no grant', async () => {
    const client = await server.createClient();
    const { code, verifier } = await codeForClient(server, client);
    expectUnavailable(await withRefreshTokenWritesCut(() => exchangeCode(server, client, code, verifier)), 'POST /token');

    const { db } = server.services;
    expect((await db.query('SELECT id FROM grants WHERE client_id = $1', [client.client_id])).rows).toEqual([]);
    const spent = await db.query('SELECT used_at, grant_id FROM auth_codes WHERE code_hash = $1', [sha256(code)]);
    expect(spent.rows).toEqual([{ used_at: null, grant_id: null }]);
    // So the client's retry gets its tokens.
    expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
  });

  it('a refresh cut off leaves the presented refresh token unspent and its grant untouched', async () => {
    const issued = await issueTokens(server);
    const grantState = async () =>
      (
        await server.services.db.query(
          `SELECT g.expires_at, g.last_refreshed_at, g.revoked_at, rt.token_hash, rt.used_at
           FROM grants g JOIN refresh_tokens rt ON rt.grant_id = g.id WHERE g.client_id = $1 ORDER BY rt.token_hash`,
          [issued.client.client_id],
        )
      ).rows;
    const before = await grantState();
    expect(before).toHaveLength(1);
    expectUnavailable(await withRefreshTokenWritesCut(() => refresh(server, issued.client, issued.refresh_token)), 'POST /token');

    expect(await grantState()).toEqual(before);
    expect((await refresh(server, issued.client, issued.refresh_token)).statusCode).toBe(200);
  });

  it('a code exchange that loses a serialization conflict answers 503, spends nothing, and succeeds when retried', async () => {
    const client = await server.createClient();
    const { code, verifier } = await codeForClient(server, client);
    const { db } = server.services;
    // The engine raises the SQLSTATE itself (40001), as it does for the loser of a conflict under SERIALIZABLE.
    await db.exec(`
      CREATE FUNCTION conflict() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = 'serialization_failure'; END $$;
      CREATE TRIGGER conflict BEFORE INSERT ON grants FOR EACH ROW EXECUTE FUNCTION conflict();`);
    try {
      expectUnavailable(await exchangeCode(server, client, code, verifier), 'POST /token');
    } finally {
      await db.exec('DROP TRIGGER conflict ON grants; DROP FUNCTION conflict();');
    }
    expect((await db.query('SELECT used_at FROM auth_codes WHERE code_hash = $1', [sha256(code)])).rows).toEqual([{ used_at: null }]);
    expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
  });

  // A real deadlock needs a second connection beside the server's: PostgreSQL only.
  it.runIf(usingPostgres)('a refresh that PostgreSQL picks as a deadlock victim answers 503 and rotates when retried', async () => {
    const issued = await issueTokens(server);
    const grantId = (decodeJwt(issued.access_token).jti as string).split('.')[0];
    const other = new pg.Client({ connectionString: server.databaseUrl });
    await other.connect();
    try {
      // The other writer holds the grant; the refresh spends its token, then waits for the grant (the new
      // token's foreign key); the other writer then wants the token: a cycle. The refresh's backend has
      // waited longest and checks first (deadlock_timeout, 1 s by default), so it is the one rolled back.
      await other.query('BEGIN');
      await other.query(`SET LOCAL deadlock_timeout = '30s'`);
      await other.query('SELECT 1 FROM grants WHERE id = $1 FOR UPDATE', [grantId]);
      const refreshing = refresh(server, issued.client, issued.refresh_token);
      const waiting = async () =>
        (await other.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))`)).rows[0].n > 0;
      await within(10_000, waiting, 20);
      const touched = other.query('UPDATE refresh_tokens SET scope = scope WHERE token_hash = $1', [sha256(issued.refresh_token)]);
      expectUnavailable(await refreshing, 'POST /token');
      await touched;
      await other.query('ROLLBACK');
    } finally {
      await other.end();
    }
    expect((await refresh(server, issued.client, issued.refresh_token)).statusCode).toBe(200);
  });
});
