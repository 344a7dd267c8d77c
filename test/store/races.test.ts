import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { exchangeCode, issueTokens, refresh, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, completeInBrowser, signInToCode, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PARALLEL = 20;

describe(`races (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  // Within the reuse interval the same exchange again is a retry of a lost answer (test/tokens/code-retry.test.ts).
  it('20 parallel redemptions of one code give exactly one 200 and no 5xx without a reuse interval', async () => {
    const strict = await startTestServer({ REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: '0' });
    try {
      const { client, code, verifier } = await signInToCode(strict);
      const results = await Promise.all(Array.from({ length: PARALLEL }, () => exchangeCode(strict, client, code, verifier)));
      const statuses = results.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s >= 500)).toHaveLength(0);
      for (const r of results.filter((r) => r.statusCode !== 200)) expect(r.json().error).toBe('invalid_grant');
      // the replays revoked what the one success issued
      const winner = results.find((r) => r.statusCode === 200)!.json();
      expect((await userinfo(strict, winner.access_token)).statusCode).toBe(401);
    } finally {
      await strict.close();
    }
  });

  // Within the reuse interval a repeat of the token just spent is a retry (test/tokens/refresh-retry.test.ts):
  // several may get a pair, each discarding the one before, so that one token of the family stays live.
  it('20 parallel uses of one refresh token leave exactly one live refresh token, issued by a 200, and no 5xx', async () => {
    const { client, refresh_token } = await issueTokens(server);
    const results = await Promise.all(Array.from({ length: PARALLEL }, () => refresh(server, client, refresh_token)));
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s >= 500)).toHaveLength(0);
    for (const r of results.filter((r) => r.statusCode !== 200)) expect(r.json().error).toBe('invalid_grant');
    const issued = results.filter((r) => r.statusCode === 200).map((r) => sha256(r.json().refresh_token));
    const { rows } = await server.services.db.query<{ token_hash: string }>(
      `SELECT token_hash FROM refresh_tokens WHERE used_at IS NULL AND grant_id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1)`,
      [sha256(refresh_token)],
    );
    expect(rows).toHaveLength(1);
    expect(issued).toContain(rows[0].token_hash);
  });

  it('20 parallel uses of one refresh token give at most one 200 and no 5xx without a reuse interval', async () => {
    const strict = await startTestServer({ REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: '0' });
    try {
      const { client, refresh_token } = await issueTokens(strict);
      const results = await Promise.all(Array.from({ length: PARALLEL }, () => refresh(strict, client, refresh_token)));
      const statuses = results.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(1);
      expect(statuses.filter((s) => s >= 500)).toHaveLength(0);
      for (const r of results.filter((r) => r.statusCode !== 200)) expect(r.json().error).toBe('invalid_grant');
    } finally {
      await strict.close();
    }
  });

  it('two agents authenticating one request in parallel: one winner, one 409', async () => {
    const client = await server.createClient();
    const [a, b] = await Promise.all([server.createAgent(), server.createAgent()]);
    const { requestId } = await startAuthorize(server, client);
    const results = await Promise.all(
      [a, b].map((agent) => agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const winner = results[0].statusCode === 200 ? a : b;
    const { rows } = await server.services.db.query<{ agent_id: string }>('SELECT agent_id FROM auth_requests WHERE id = $1', [requestId]);
    expect(rows[0].agent_id).toBe(winner.agent_id);
  });

  it('20 parallel completions in one browser leave exactly one working code', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId, cookie, verifier } = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    const results = await Promise.all(Array.from({ length: PARALLEL }, () => completeInBrowser(server, requestId, cookie)));
    expect(results.filter((r) => r.res.statusCode >= 500)).toHaveLength(0);
    // A visit after the first completion replaces the code it never delivered (retry-safe completion):
    // whatever the order, one code is left unspent, and only it is redeemed.
    const { rows } = await server.services.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM auth_codes WHERE request_id = $1 AND used_at IS NULL',
      [requestId],
    );
    expect(rows[0].n).toBe(1);
    const codes = results.flatMap((r) => (r.code ? [r.code] : []));
    expect(new Set(codes).size).toBe(codes.length);
    const exchanged = await Promise.all(codes.map((code) => exchangeCode(server, client, code, verifier)));
    expect(exchanged.filter((r) => r.statusCode === 200)).toHaveLength(1);
  });
});
