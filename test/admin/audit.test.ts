import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpired } from '../../src/jobs/purge.js';
import { loggerOptions } from '../../src/logger.js';
import { exchangeCode, refresh, revoke } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, completeInBrowser, setRequestExpiry, signInToCode, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

type AuditRow = Record<string, any>;

/** A test server whose JSON log lines are kept, as a log pipeline would read them. */
async function startLoggedServer(env: Record<string, string> = {}) {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const server = await startTestServer(env, { logger: pino(loggerOptions('info') as pino.LoggerOptions, sink) });
  return { server, auditLines: () => lines.filter((l) => l.msg === 'audit').map((l) => l.audit) };
}

describe(`audit log (${storeName})`, () => {
  let server: TestServer;
  let auditLines: () => AuditRow[];
  beforeAll(async () => {
    ({ server, auditLines } = await startLoggedServer());
  });
  afterAll(() => server.close());

  async function audit(query: Record<string, string | number>) {
    const res = await server.adminCall('GET', `/admin/audit?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`);
    expect(res.statusCode, JSON.stringify(res.json)).toBe(200);
    return res.json as { events: AuditRow[]; next_cursor: string | null };
  }
  /** The events of one authorization request, oldest first. */
  const trail = async (requestId: string) => (await audit({ request_id: requestId })).events.reverse();
  const userIdOf = async (agentId: string) =>
    (await server.services.db.query<{ user_id: string }>('SELECT user_id FROM agents WHERE id = $1', [agentId])).rows[0].user_id;

  it('records a full sign-in in order, in the table and as JSON log lines', async () => {
    const { client, agent, code, verifier, requestId } = await signInToCode(server, { model: 'claude-audit' });
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    const rotated = (await refresh(server, client, tokens.refresh_token)).json();
    expect((await revoke(server, client, rotated.refresh_token)).statusCode).toBe(200);

    const events = await trail(requestId);
    expect(events.map((e) => e.event)).toEqual(['authorize_started', 'agent_authenticated', 'completed', 'token_issued', 'refreshed', 'revoked']);
    const userId = await userIdOf(agent.agent_id);
    const grantId = events[3].grant_id;
    expect(grantId).toMatch(/^grant_/);
    expect(events[0]).toMatchObject({
      request_id: requestId,
      client_id: client.client_id,
      agent_id: null,
      user_id: null,
      model: null,
      detail: { scope: 'openid email profile' },
    });
    for (const e of events.slice(1)) {
      expect(e).toMatchObject({
        request_id: requestId,
        client_id: client.client_id,
        agent_id: agent.agent_id,
        user_id: userId,
        email: agent.email,
        model: 'claude-audit',
      });
    }
    for (const e of events.slice(3)) expect(e.grant_id).toBe(grantId);
    expect(events[5].reason).toBe('client_revocation');
    // ids and times only grow
    for (let i = 1; i < events.length; i++) {
      expect(events[i].id).toBeGreaterThan(events[i - 1].id);
      expect(new Date(events[i].at).getTime()).toBeGreaterThanOrEqual(new Date(events[i - 1].at).getTime());
    }

    const lines = auditLines().filter((l) => l.request_id === requestId || l.grant_id === grantId);
    expect(lines.map((l) => l.event)).toEqual(events.map((e) => e.event));
    expect(lines.find((l) => l.event === 'token_issued')).toMatchObject({
      agent_id: agent.agent_id,
      client_id: client.client_id,
      model: 'claude-audit',
    });
    expect(lines.at(-1)).toMatchObject({ event: 'revoked', grant_id: grantId, reason: 'client_revocation' });
  });

  it('records a revoked access token, naming its grant', async () => {
    const { client, code, verifier, requestId } = await signInToCode(server);
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    await revoke(server, client, tokens.access_token);
    const last = (await trail(requestId)).at(-1)!;
    expect(last).toMatchObject({ event: 'revoked', reason: 'client_revocation', detail: { token_type: 'access_token' } });
    expect(last.grant_id).toMatch(/^grant_/);
  });

  it('records failed agent authentications with their reason; the answer never tells which', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const inactive = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${inactive.agent_id}`, { active: false });
    const { requestId } = await startAuthorize(server, client);

    const attempts = [
      { reason: 'unknown_agent', agent_id: 'agent_nobody', agent_secret: agent.agent_secret },
      { reason: 'wrong_secret', agent_id: agent.agent_id, agent_secret: `${agent.agent_secret}x` },
      { reason: 'inactive_agent', agent_id: inactive.agent_id, agent_secret: inactive.agent_secret },
    ];
    const answers = [];
    for (const { agent_id, agent_secret } of attempts) {
      const res = await agentAuthenticate(server, { request_id: requestId, agent_id, agent_secret, model: 'm-fail' });
      answers.push({ status: res.statusCode, body: res.json() });
    }
    expect(answers[0]).toEqual({ status: 401, body: { error: 'invalid_credentials', error_description: expect.any(String) } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);

    const missing = await agentAuthenticate(server, { request_id: 'req_missing', agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(missing.statusCode).toBe(404);
    const ok = await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(ok.statusCode).toBe(200);
    const other = await server.createAgent();
    const taken = await agentAuthenticate(server, { request_id: requestId, agent_id: other.agent_id, agent_secret: other.agent_secret });
    expect(taken.statusCode).toBe(409);

    const failures = (await trail(requestId)).filter((e) => e.event === 'agent_authentication_failed');
    expect(failures.map((e) => [e.reason, e.agent_id])).toEqual([...attempts.map((a) => [a.reason, a.agent_id]), ['request_taken', other.agent_id]]);
    expect(failures[0]).toMatchObject({ client_id: client.client_id, user_id: null, model: 'm-fail' });
    expect(failures[1].user_id).toBe(await userIdOf(agent.agent_id));
    const notFound = (await audit({ request_id: 'req_missing' })).events;
    expect(notFound).toEqual([expect.objectContaining({ event: 'agent_authentication_failed', reason: 'request_not_found', client_id: null })]);

    const lines = auditLines().filter((l) => l.event === 'agent_authentication_failed' && [requestId, 'req_missing'].includes(l.request_id));
    expect(lines.map((l) => l.reason)).toEqual(['unknown_agent', 'wrong_secret', 'inactive_agent', 'request_not_found', 'request_taken']);
    for (const line of lines) expect(JSON.stringify(line)).not.toContain('aa_as_');
  });

  it('records reuse: a reused refresh token and a replayed code revoke their grant', async () => {
    const { client, code, verifier, requestId } = await signInToCode(server);
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    const successor = (await refresh(server, client, tokens.refresh_token)).json();
    // The successor was used: presenting its parent again is reuse, not a retry (test/tokens/refresh-retry.test.ts).
    await refresh(server, client, successor.refresh_token);
    expect((await refresh(server, client, tokens.refresh_token)).json().error).toBe('invalid_grant');
    const events = await trail(requestId);
    expect(events.slice(-3).map((e) => [e.event, e.reason])).toEqual([
      ['refreshed', null],
      ['reuse_detected', 'refresh_token_reuse'],
      ['revoked', 'refresh_token_reuse'],
    ]);

    const second = await signInToCode(server, { client });
    await exchangeCode(server, client, second.code, second.verifier);
    // An intercepted code comes without its verifier (the same exchange again is a retry: test/tokens/code-retry.test.ts).
    expect((await exchangeCode(server, client, second.code, 'x'.repeat(43))).json().error).toBe('invalid_grant');
    expect((await trail(second.requestId)).slice(-3).map((e) => [e.event, e.reason])).toEqual([
      ['token_issued', null],
      ['reuse_detected', 'code_replay'],
      ['revoked', 'code_replay'],
    ]);

    // The log lines match the table's rows: reuse_detected, then revoked, for each.
    const reuseLines = auditLines().filter((l) => ['reuse_detected', 'revoked'].includes(l.event) && l.client_id === client.client_id);
    expect(reuseLines.map((l) => [l.event, l.reason])).toEqual([
      ['reuse_detected', 'refresh_token_reuse'],
      ['revoked', 'refresh_token_reuse'],
      ['reuse_detected', 'code_replay'],
      ['revoked', 'code_replay'],
    ]);
  });

  it('records operator revocations with their level as the reason', async () => {
    const { client, agent, code, verifier, requestId } = await signInToCode(server);
    await exchangeCode(server, client, code, verifier);
    const other = await signInToCode(server, { agent });
    await exchangeCode(server, other.client, other.code, other.verifier);
    expect((await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).json).toEqual({ revoked: 2 });
    expect((await trail(requestId)).at(-1)).toMatchObject({ event: 'revoked', reason: 'admin_agent', agent_id: agent.agent_id });
    // One line per grant, as one row per grant, each naming its grant and website.
    const lines = auditLines().slice(-2);
    expect(lines.map((l) => l.client_id).sort()).toEqual([client.client_id, other.client.client_id].sort());
    for (const line of lines)
      expect(line).toMatchObject({ event: 'revoked', agent_id: agent.agent_id, reason: 'admin_agent', grant_id: expect.stringMatching(/^grant_/) });
  });

  it('records an expiry once, when it is first noticed, and keeps the check-status answer', async () => {
    const client = await server.createClient();
    const { requestId } = await startAuthorize(server, client);
    await setRequestExpiry(server, requestId, -1);

    const expiredBody = { status: 'error', error: 'request_expired', error_description: 'the authorization request has expired' };
    for (let i = 0; i < 2; i++) {
      const res = await checkStatus(server, requestId);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(expiredBody);
    }
    const { rows } = await server.services.db.query('SELECT status, error FROM auth_requests WHERE id = $1', [requestId]);
    expect(rows[0]).toEqual({ status: 'error', error: 'request_expired' });

    const agent = await server.createAgent();
    const late = await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(late.statusCode).toBe(400);
    expect(late.json().error).toBe('request_expired');

    const events = await trail(requestId);
    expect(events.map((e) => [e.event, e.reason])).toEqual([
      ['authorize_started', null],
      ['expired', 'request_expired'],
      ['agent_authentication_failed', 'request_expired'],
    ]);
    expect(events[1].detail).toEqual({ status_before: 'pending' });
    expect(auditLines().filter((l) => l.request_id === requestId && l.event === 'expired')).toHaveLength(1);
  });

  it('logs the expiry when an agent naming the website it expects is the first to notice it', async () => {
    const client = await server.createClient();
    const { requestId } = await startAuthorize(server, client);
    await setRequestExpiry(server, requestId, -1);
    const agent = await server.createAgent();
    const late = await agentAuthenticate(server, {
      request_id: requestId,
      agent_id: agent.agent_id,
      agent_secret: agent.agent_secret,
      expected_redirect_origin: new URL(client.redirect_uris[0]).origin,
    });
    expect(late.json().error).toBe('request_expired');
    expect(auditLines().filter((l) => l.request_id === requestId && l.event === 'expired')).toHaveLength(1);
  });

  it('has the purge job record the expiry of requests nobody looked at before deleting them', async () => {
    const client = await server.createClient();
    const { requestId } = await startAuthorize(server, client);
    const agent = await server.createAgent();
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'm-late' });
    await setRequestExpiry(server, requestId, -7200);

    await purgeExpired(server.services, { auditRetentionDays: 365, auditRetentionWithoutAgentDays: 365, log: server.app.log });
    expect((await server.services.db.query('SELECT 1 FROM auth_requests WHERE id = $1', [requestId])).rows).toHaveLength(0);
    const last = (await trail(requestId)).at(-1)!;
    expect(last).toMatchObject({ event: 'expired', agent_id: agent.agent_id, model: 'm-late', detail: { status_before: 'authenticated' } });
  });

  describe('GET /admin/audit', () => {
    it('filters by agent, email, client, event and time, and pages newest first', async () => {
      const client = await server.createClient();
      const agent = await server.createAgent();
      for (let i = 0; i < 3; i++) {
        const { code, verifier } = await signInToCode(server, { client, agent });
        await exchangeCode(server, client, code, verifier);
      }
      // the operator's agent_created (actor admin), then per sign-in: agent_authenticated, completed, token_issued
      const all = (await audit({ agent_id: agent.agent_id, limit: 200 })).events;
      expect(all).toHaveLength(10);
      expect(all.at(-1)).toMatchObject({ event: 'agent_created', actor: 'admin' });
      expect(all.every((e) => e.agent_id === agent.agent_id)).toBe(true);
      expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => b - a));

      const byEmail = (await audit({ email: agent.email.toUpperCase(), limit: 200 })).events;
      expect(byEmail.map((e) => e.id)).toEqual(all.map((e) => e.id));
      const byClient = (await audit({ client_id: client.client_id, limit: 200 })).events;
      expect(byClient).toHaveLength(13); // plus the three authorize_started and the operator's client_created
      const issued = (await audit({ client_id: client.client_id, event: 'token_issued' })).events;
      expect(issued).toHaveLength(3);

      // pages of 4, 4 and 2, without overlap, in the same order as one page
      const pages: AuditRow[][] = [];
      let cursor: string | null = null;
      do {
        const page: { events: AuditRow[]; next_cursor: string | null } = await audit({
          agent_id: agent.agent_id,
          limit: 4,
          ...(cursor ? { cursor } : {}),
        });
        pages.push(page.events);
        cursor = page.next_cursor;
      } while (cursor);
      expect(pages.map((p) => p.length)).toEqual([4, 4, 2]);
      expect(pages.flat().map((e) => e.id)).toEqual(all.map((e) => e.id));

      // time range: from is inclusive, to exclusive
      const oldest = all.at(-1)!;
      const newest = all[0];
      const recent = (await audit({ agent_id: agent.agent_id, from: newest.at, limit: 200 })).events;
      expect(recent.length).toBeGreaterThanOrEqual(1);
      expect(recent.every((e) => e.at >= newest.at)).toBe(true);
      expect((await audit({ agent_id: agent.agent_id, to: oldest.at })).events).toEqual([]);
      expect((await audit({ agent_id: agent.agent_id, from: '2000-01-01', to: '2999-01-01', limit: 200 })).events).toHaveLength(10);
      expect((await audit({ agent_id: agent.agent_id, from: '2999-01-01' })).events).toEqual([]);
      expect(await audit({ agent_id: 'agent_never_seen' })).toEqual({ events: [], next_cursor: null });
    });

    it('refuses malformed filters with 400', async () => {
      for (const query of [
        'limit=0',
        'limit=201',
        'limit=x',
        'cursor=abc',
        'cursor=0',
        'from=yesterday',
        'to=2024-13-01',
        'event=nope',
        'email=not-an-email',
        'from=0000-01-01',
        'to=0000-12-31T23:59:59Z',
        'from=9999-12-31T23:59:59-12:00',
      ]) {
        const res = await server.adminCall('GET', `/admin/audit?${query}`);
        expect(res.statusCode, query).toBe(400);
        expect(res.json.error).toBe('invalid_request');
      }
      expect((await audit({})).events.length).toBeLessThanOrEqual(50);
    });
  });
});

describe(`audit log of a denied sign-in (${storeName}, REQUIRE_APPROVAL=true)`, () => {
  let server: TestServer;
  let auditLines: () => AuditRow[];
  beforeAll(async () => {
    ({ server, auditLines } = await startLoggedServer({ REQUIRE_APPROVAL: 'true' }));
  });
  afterAll(() => server.close());

  it('records denied when the user presses Deny', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const started = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'm-denied' });
    const page = await completeInBrowser(server, started.requestId, started.cookie);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.res.body)![1];
    const res = await server.app.inject({
      method: 'POST',
      url: '/authorize/decision',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: started.cookie! },
      payload: new URLSearchParams({ request_id: started.requestId, csrf_token: csrf, decision: 'deny' }).toString(),
    });
    expect(res.statusCode).toBe(303);

    const events = (await server.adminCall('GET', `/admin/audit?request_id=${started.requestId}`)).json.events.reverse();
    expect(events.map((e: AuditRow) => [e.event, e.reason])).toEqual([
      ['authorize_started', null],
      ['agent_authenticated', null],
      ['denied', 'access_denied'],
    ]);
    expect(events[2]).toMatchObject({ agent_id: agent.agent_id, model: 'm-denied', client_id: client.client_id });
    expect(auditLines().map((l) => l.event)).toEqual(['authorize_started', 'agent_authenticated', 'denied']);
  });
});
