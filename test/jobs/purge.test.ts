import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrantCache } from '../../src/cache/grant-cache.js';
import type { Db } from '../../src/db/types.js';
import { purgeExpired, schedulePurge } from '../../src/jobs/purge.js';
import { createMetrics } from '../../src/metrics.js';
import { createStore } from '../../src/store/index.js';
import { issueTokens, revoke, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, setRequestExpiry, startAuthorize } from '../helpers/flow.js';
import { within } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`purging expired rows (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const count = async (table: string) => (await server.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;

  it('removes what expired long enough ago and keeps everything live', async () => {
    const client = await server.createClient();
    const old = await startAuthorize(server, client);
    const live = await startAuthorize(server, client);
    const oldTokens = await issueTokens(server, { client });
    const liveTokens = await issueTokens(server, { client });
    const endedTokens = await issueTokens(server, { client });
    expect((await revoke(server, client, oldTokens.access_token)).statusCode).toBe(200);

    // Age the "old" sign-in past every lifetime and grace period.
    const db = server.services.db;
    await db.query(`UPDATE auth_requests SET expires_at = now() - interval '2 hours' WHERE id = $1`, [old.requestId]);
    await db.query(
      `UPDATE auth_codes SET expires_at = now() - interval '2 hours' WHERE code_hash = (SELECT code_hash FROM auth_codes ORDER BY created_at LIMIT 1)`,
    );
    await db.query(
      `UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE grant_id IN (SELECT id FROM grants ORDER BY created_at LIMIT 1)`,
    );
    await db.query(`UPDATE grants SET expires_at = now() - interval '31 days' WHERE id IN (SELECT id FROM grants ORDER BY created_at LIMIT 1)`);
    // A grant that ended recently is sign-in history: it stays as long as the audit log does.
    const ended = await db.query<{ id: string }>(
      `UPDATE grants SET expires_at = now() - interval '1 day' WHERE id IN (SELECT id FROM grants ORDER BY created_at DESC LIMIT 1) RETURNING id`,
    );
    await db.query(`UPDATE revoked_access_tokens SET expires_at = now() - interval '1 second'`);
    // A console session signed out of is remembered only until it would have expired.
    await db.query(
      `INSERT INTO console_signed_out (session_hash, expires_at) VALUES ('ended', now() - interval '1 second'), ('live', now() + interval '1 hour')`,
    );
    // Owner sessions go at their end; email links a day after they were sent (the limit per email counts them).
    await db.query(`INSERT INTO users (id, email) VALUES ('user_purge', 'purge@example.com')`);
    await db.query(
      `INSERT INTO owner_sessions (session_hash, user_id, expires_at, authenticated_by)
       VALUES ('ended', 'user_purge', now() - interval '1 second', 'email_link'), ('live', 'user_purge', now() + interval '1 hour', 'email_link')`,
    );
    await db.query(
      `INSERT INTO owner_email_links (token_hash, email, created_at, expires_at)
       VALUES ('old', 'purge@example.com', now() - interval '25 hours', now() - interval '24 hours'),
              ('recent', 'purge@example.com', now() - interval '1 hour', now() - interval '45 minutes')`,
    );
    // A spent assertion id is kept only until the assertion could no longer be accepted.
    await db.query(
      `INSERT INTO agent_assertion_jtis (agent_id, jti, expires_at) VALUES ('agent_x', 'spent', now() - interval '1 second'), ('agent_x', 'live', now() + interval '1 minute')`,
    );
    // A DPoP proof is remembered only while it could be accepted.
    await db.query(
      `INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES ('spent', now() - interval '1 second'), ('live', now() + interval '1 minute')`,
    );
    // A passkey ceremony's challenge lives only until it expires.
    await db.query(
      `INSERT INTO webauthn_challenges (challenge, purpose, expires_at) VALUES ('abandoned', 'sign_in', now() - interval '1 second'), ('live', 'sign_in', now() + interval '5 minutes')`,
    );
    const oldEvents = await db.query(`UPDATE audit_events SET at = now() - interval '31 days' WHERE request_id = $1`, [old.requestId]);

    const before = {
      auth_requests: await count('auth_requests'),
      auth_codes: await count('auth_codes'),
      refresh_tokens: await count('refresh_tokens'),
      grants: await count('grants'),
      revoked_access_tokens: await count('revoked_access_tokens'),
      console_signed_out: await count('console_signed_out'),
      owner_sessions: await count('owner_sessions'),
      owner_email_links: await count('owner_email_links'),
      agent_assertion_jtis: await count('agent_assertion_jtis'),
      dpop_proofs: await count('dpop_proofs'),
      webauthn_challenges: await count('webauthn_challenges'),
      audit_events: await count('audit_events'),
    };
    const removed = await purgeExpired(server.services, { auditRetentionDays: 30, auditRetentionWithoutAgentDays: 30, log: server.app.log });
    expect(removed).toEqual({
      auth_requests: 1,
      auth_codes: 1,
      refresh_tokens: 1,
      revoked_access_tokens: 1,
      console_signed_out: 1,
      owner_sessions: 1,
      owner_email_links: 1,
      agent_assertion_jtis: 1,
      // Covered by test/clients: nothing of theirs here.
      client_assertion_jtis: 0,
      clients: 0,
      dpop_proofs: 1,
      webauthn_challenges: 1,
      signing_keys: 0,
      grants: 1,
      audit_events: oldEvents.rowCount,
      logout_deliveries: 0,
    });
    expect(oldEvents.rowCount).toBeGreaterThan(0);
    const { audit_events: eventsBefore, ...tables } = before;
    for (const [table, n] of Object.entries(tables)) expect(await count(table)).toBe(n - removed[table]);
    // the purge first recorded the old request's expiry: one new audit event
    expect(await count('audit_events')).toBe(eventsBefore - removed.audit_events + 1);

    // the live sign-in is untouched and still works
    const { rows } = await db.query('SELECT id FROM auth_requests WHERE id = $1', [live.requestId]);
    expect(rows).toHaveLength(1);
    const res = await server.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${liveTokens.access_token}` } });
    expect(res.statusCode).toBe(200);
    expect((await db.query('SELECT 1 FROM grants WHERE id = $1', [ended.rows[0].id])).rows).toHaveLength(1);
    expect((await userinfo(server, endedTokens.access_token)).statusCode).toBe(401);
    // a second run finds nothing more
    expect(
      Object.values(await purgeExpired(server.services, { auditRetentionDays: 30, auditRetentionWithoutAgentDays: 30, log: server.app.log })).every(
        (n) => n === 0,
      ),
    ).toBe(true);
  });

  it('keeps the audit rows of sign-ins that never reached an agent only briefly, and the rest of the history', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const unclaimed = await startAuthorize(server, client);
    const claimed = await startAuthorize(server, client);
    expect(
      (await agentAuthenticate(server, { request_id: claimed.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).statusCode,
    ).toBe(200);
    const db = server.services.db;
    await db.query(`INSERT INTO audit_events (event, actor, at) VALUES ('aged_operator_action', 'admin', now() - interval '3 days')`);
    await db.query(`UPDATE audit_events SET at = now() - interval '3 days' WHERE request_id = ANY($1)`, [[unclaimed.requestId, claimed.requestId]]);
    const events = async (requestId: string) =>
      (await db.query<{ event: string }>('SELECT event FROM audit_events WHERE request_id = $1 ORDER BY id', [requestId])).rows.map((r) => r.event);
    expect(await events(unclaimed.requestId)).toEqual(['authorize_started']);

    await purgeExpired(server.services, { auditRetentionDays: 30, auditRetentionWithoutAgentDays: 2, log: server.app.log });
    expect(await events(unclaimed.requestId)).toEqual([]);
    // The claimed sign-in keeps its whole history, its start (no agent yet) included.
    expect(await events(claimed.requestId)).toEqual(['authorize_started', 'agent_authenticated']);
    expect((await db.query(`SELECT 1 FROM audit_events WHERE event = 'aged_operator_action'`)).rows).toHaveLength(1);
  });
});

describe(`the purge schedule (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  /**
   * The test server's store with every statement held back `delayMs` first, so that one purge
   * run (several statements) takes longer than a 1 s interval; counts statements, and how many
   * are under way at once.
   */
  function slowStore(delayMs: number) {
    const { db } = server.services;
    const seen = { statements: 0, underWay: 0, mostAtOnce: 0 };
    const query = async (sql: string, params?: unknown[]) => {
      seen.statements++;
      seen.mostAtOnce = Math.max(seen.mostAtOnce, ++seen.underWay);
      try {
        await sleep(delayMs);
        return await db.query(sql, params);
      } finally {
        seen.underWay--;
      }
    };
    // The purge's store over that connection (no grant cache: the purge reads no grant).
    const store = createStore({ ...db, query: query as Db['query'] }, new GrantCache(0, createMetrics(), 10_000));
    return { deps: { store, events: server.services.events }, seen };
  }

  /** A new authorization request, expired long enough ago to be purged. */
  async function abandonedRequest() {
    const { requestId } = await startAuthorize(server, await server.createClient());
    await setRequestExpiry(server, requestId, -2 * 3600);
    return requestId;
  }
  const exists = async (requestId: string) =>
    (await server.services.db.query('SELECT 1 FROM auth_requests WHERE id = $1', [requestId])).rows.length > 0;
  const until = (check: () => Promise<boolean>) => within(30_000, check, 100);

  it('purges on its schedule, one run at a time however long a run takes, and not at all once stopped', async () => {
    const { deps, seen } = slowStore(200);
    const first = await abandonedRequest();
    const stop = schedulePurge(deps, 1, { auditRetentionDays: 30, auditRetentionWithoutAgentDays: 30, log: server.app.log });
    try {
      expect(await until(async () => !(await exists(first)))).toBe(true);
      // Aged after the first run deleted from auth_requests: only a later run can take it.
      const second = await abandonedRequest();
      expect(await until(async () => !(await exists(second)))).toBe(true);
    } finally {
      await stop();
    }
    // Stopping waited for the run under way, and runs never overlapped.
    expect(seen.underWay).toBe(0);
    expect(seen.mostAtOnce).toBe(1);

    // Stopped (as server close stops it): two intervals later nothing more ran.
    const statements = seen.statements;
    const third = await abandonedRequest();
    await sleep(2500);
    expect(seen.statements).toBe(statements);
    expect(await exists(third)).toBe(true);
  }, 60000);
});
