import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { exchangeCode, insertCode, introspect, refresh, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

type Pair = { access_token: string; refresh_token: string };

/**
 * A code exchange whose answer was lost (a 503 whose write committed later, a reset connection, an
 * instance killed after the commit) must not lose the sign-in: the same client presenting the same
 * code, code_verifier and redirect_uri within REFRESH_TOKEN_REUSE_INTERVAL_SECONDS gets a new pair of
 * the same grant, and the pair it never received stops working. Anything else stays reuse: the
 * grant and every token it issued are revoked (docs/protocol.md, "Retried exchanges").
 */
describe(`retried code exchanges (${storeName})`, () => {
  let server: TestServer;
  let noInterval: TestServer;
  beforeAll(async () => {
    [server, noInterval] = await Promise.all([startTestServer(), startTestServer({ REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: '0' })]);
  });
  afterAll(() => Promise.all([server.close(), noInterval.close()]));

  /** A code exchanged once, whose answer (`lost`) never reached the website. */
  async function lostExchange(on: TestServer = server) {
    const client = await on.createClient();
    const agent = await on.createAgent();
    const { code, verifier } = await insertCode(on.services, {
      clientId: client.client_id,
      agentId: agent.agent_id,
      redirectUri: client.redirect_uris[0],
    });
    const first = await exchangeCode(on, client, code, verifier);
    expect(first.statusCode).toBe(200);
    return { client, agent, code, verifier, lost: first.json() as Pair };
  }

  const grantOf = (accessToken: string) => JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).jti.split('.')[0] as string;
  async function revokedReason(on: TestServer, grantId: string) {
    const { rows } = await on.services.db.query<{ revoked_reason: string | null }>('SELECT revoked_reason FROM grants WHERE id = $1', [grantId]);
    return rows[0].revoked_reason;
  }
  /** Whether a pair still works: its access token at /userinfo and /introspect (its refresh token is left unspent). */
  async function works(on: TestServer, client: { client_id: string; client_secret: string }, pair: Pair) {
    const [info, introspected] = await Promise.all([userinfo(on, pair.access_token), introspect(on, client, pair.access_token)]);
    expect(introspected.json().active).toBe(info.statusCode === 200);
    return info.statusCode === 200;
  }

  it('answers a retry within the interval with a new pair of the same grant; the lost pair stops working', async () => {
    const { client, code, verifier, lost } = await lostExchange();
    const retried = await exchangeCode(server, client, code, verifier);
    expect(retried.statusCode, retried.body).toBe(200);
    const pair = retried.json() as Pair;
    expect(pair.access_token).not.toBe(lost.access_token);
    expect(pair.refresh_token).not.toBe(lost.refresh_token);
    expect(grantOf(pair.access_token)).toBe(grantOf(lost.access_token));
    expect(await works(server, client, pair)).toBe(true);
    // The lost access token is refused by /userinfo and /introspect at once.
    expect(await works(server, client, lost)).toBe(false);

    // A second retry is a retry too; the pair it replaces stops working in turn.
    const again = (await exchangeCode(server, client, code, verifier)).json() as Pair;
    expect(await works(server, client, pair)).toBe(false);
    expect(await works(server, client, again)).toBe(true);
    const { rows } = await server.services.db.query<{ token_hash: string }>(
      `SELECT token_hash FROM refresh_tokens WHERE used_at IS NULL AND grant_id = $1`,
      [grantOf(again.access_token)],
    );
    expect(rows).toEqual([{ token_hash: sha256(again.refresh_token) }]);
    expect(await revokedReason(server, grantOf(again.access_token))).toBeNull();
    const audit = await server.services.db.query<{ event: string; reason: string | null }>(
      `SELECT event, reason FROM audit_events WHERE grant_id = $1 AND event = 'revoked' ORDER BY id`,
      [grantOf(again.access_token)],
    );
    expect(audit.rows).toEqual([
      { event: 'revoked', reason: 'code_exchange_retried' },
      { event: 'revoked', reason: 'code_exchange_retried' },
    ]);

    // The latest pair refreshes as usual.
    expect((await refresh(server, client, again.refresh_token)).statusCode).toBe(200);
  });

  it("refuses the lost pair's refresh token as reuse: the grant and every token of it are revoked", async () => {
    const { client, code, verifier, lost } = await lostExchange();
    const pair = (await exchangeCode(server, client, code, verifier)).json() as Pair;
    const late = await refresh(server, client, lost.refresh_token);
    expect(late.statusCode).toBe(400);
    expect(late.json().error).toBe('invalid_grant');
    expect(await revokedReason(server, grantOf(pair.access_token))).toBe('refresh_token_reuse');
    expect(await works(server, client, pair)).toBe(false);
  });

  it('treats a retry after the interval as reuse: invalid_grant and the grant revoked', async () => {
    const { client, code, verifier, lost } = await lostExchange();
    await server.services.db.query(`UPDATE auth_codes SET used_at = used_at - interval '31 seconds' WHERE code_hash = $1`, [sha256(code)]);
    const retried = await exchangeCode(server, client, code, verifier);
    expect(retried.statusCode).toBe(400);
    expect(retried.json().error).toBe('invalid_grant');
    expect(await revokedReason(server, grantOf(lost.access_token))).toBe('code_replay');
    expect(await works(server, client, lost)).toBe(false);
  });

  it('treats anything different as reuse: another client, another code_verifier, another redirect_uri', async () => {
    const other = await server.createClient();
    const variants: [string, (x: Awaited<ReturnType<typeof lostExchange>>) => ReturnType<typeof exchangeCode>][] = [
      ['another client', (x) => exchangeCode(server, { ...other, redirect_uris: x.client.redirect_uris }, x.code, x.verifier)],
      ['another code_verifier', (x) => exchangeCode(server, x.client, x.code, `${x.verifier.slice(0, -1)}${x.verifier.endsWith('A') ? 'B' : 'A'}`)],
      ['another redirect_uri', (x) => exchangeCode(server, x.client, x.code, x.verifier, { redirect_uri: 'https://shop.example/other' })],
    ];
    for (const [name, variant] of variants) {
      const lostOne = await lostExchange();
      const res = await variant(lostOne);
      expect(res.statusCode, name).toBe(400);
      expect(res.json().error, name).toBe('invalid_grant');
      expect(await revokedReason(server, grantOf(lostOne.lost.access_token)), name).toBe('code_replay');
      // The rightful retry comes too late: the grant is gone.
      expect((await exchangeCode(server, lostOne.client, lostOne.code, lostOne.verifier)).statusCode, name).toBe(400);
    }
  });

  it('treats a retry after the pair was used (it did arrive) as reuse', async () => {
    const { client, code, verifier, lost } = await lostExchange();
    const refreshed = (await refresh(server, client, lost.refresh_token)).json() as Pair;
    expect((await exchangeCode(server, client, code, verifier)).json().error).toBe('invalid_grant');
    expect(await revokedReason(server, grantOf(lost.access_token))).toBe('code_replay');
    expect(await works(server, client, refreshed)).toBe(false);
  });

  it('a wrong client secret spends nothing and is answered invalid_client', async () => {
    const { client, code, verifier } = await lostExchange();
    expect((await exchangeCode(server, { ...client, client_secret: 'wrong' }, code, verifier)).statusCode).toBe(401);
    expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
  });

  it('with REFRESH_TOKEN_REUSE_INTERVAL_SECONDS=0, treats every second exchange as reuse, as before', async () => {
    const { client, code, verifier, lost } = await lostExchange(noInterval);
    expect((await exchangeCode(noInterval, client, code, verifier)).json().error).toBe('invalid_grant');
    expect(await revokedReason(noInterval, grantOf(lost.access_token))).toBe('code_replay');
  });

  it('two concurrent retries leave one working pair and the grant live', async () => {
    for (let round = 0; round < 4; round++) {
      const { client, code, verifier, lost } = await lostExchange();
      const answers = await Promise.all([exchangeCode(server, client, code, verifier), exchangeCode(server, client, code, verifier)]);
      // Both may win in turn (one after the other: each a retry), or one loses the race: refused, revoking nothing.
      for (const res of answers) {
        if (res.statusCode !== 200) expect(res.json().error).toBe('invalid_grant');
      }
      const pairs = answers.filter((res) => res.statusCode === 200).map((res) => res.json() as Pair);
      expect(pairs.length).toBeGreaterThanOrEqual(1);
      expect(await revokedReason(server, grantOf(lost.access_token))).toBeNull();
      const working = [];
      for (const pair of [lost, ...pairs]) if (await works(server, client, pair)) working.push(pair);
      expect(working).toHaveLength(1);
      const { rows } = await server.services.db.query<{ token_hash: string }>(
        `SELECT token_hash FROM refresh_tokens WHERE used_at IS NULL AND grant_id = $1`,
        [grantOf(lost.access_token)],
      );
      expect(rows).toEqual([{ token_hash: sha256(working[0].refresh_token) }]);
    }
  });
});
