import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpired } from '../src/jobs/purge.js';
import { issueTokens, revoke } from './helpers/codes.js';
import { storeName } from './helpers/database.js';
import { startAuthorize } from './helpers/flow.js';
import { startTestServer, type TestServer } from './helpers/server.js';

describe(`purging expired rows (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const count = async (table: string) =>
    (await server.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;

  it('removes what expired long enough ago and keeps everything live', async () => {
    const client = await server.createClient();
    const old = await startAuthorize(server, client);
    const live = await startAuthorize(server, client);
    const oldTokens = await issueTokens(server, { client });
    const liveTokens = await issueTokens(server, { client });
    expect((await revoke(server, client, oldTokens.access_token)).statusCode).toBe(200);

    // Age the "old" sign-in past every lifetime and grace period.
    const db = server.services.db;
    await db.query(`UPDATE auth_requests SET expires_at = now() - interval '2 hours' WHERE id = $1`, [old.requestId]);
    await db.query(`UPDATE auth_codes SET expires_at = now() - interval '2 hours' WHERE code_hash = (SELECT code_hash FROM auth_codes ORDER BY created_at LIMIT 1)`);
    await db.query(`UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE grant_id IN (SELECT id FROM grants ORDER BY created_at LIMIT 1)`);
    await db.query(`UPDATE grants SET expires_at = now() - interval '1 second' WHERE id IN (SELECT id FROM grants ORDER BY created_at LIMIT 1)`);
    await db.query(`UPDATE revoked_access_tokens SET expires_at = now() - interval '1 second'`);
    const oldEvents = await db.query(`UPDATE audit_events SET at = now() - interval '31 days' WHERE request_id = $1`, [old.requestId]);

    const before = {
      auth_requests: await count('auth_requests'),
      auth_codes: await count('auth_codes'),
      refresh_tokens: await count('refresh_tokens'),
      grants: await count('grants'),
      revoked_access_tokens: await count('revoked_access_tokens'),
      audit_events: await count('audit_events'),
    };
    const removed = await purgeExpired(db, { auditRetentionDays: 30 });
    expect(removed).toEqual({
      auth_requests: 1,
      auth_codes: 1,
      refresh_tokens: 1,
      revoked_access_tokens: 1,
      grants: 1,
      audit_events: oldEvents.rowCount,
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
    // a second run finds nothing more
    expect(Object.values(await purgeExpired(db, { auditRetentionDays: 30 })).every((n) => n === 0)).toBe(true);
  });
});
