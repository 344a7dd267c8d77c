import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { issueTokens, refresh, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A refresh whose answer was lost (a timeout, a reset connection, a crash after the commit) leaves
 * the client holding the token it just spent. Presenting it again within
 * REFRESH_TOKEN_REUSE_INTERVAL_SECONDS is a retry, not theft, as long as the successor it was
 * given never came back (docs/security.md).
 */
describe(`retried refreshes (${storeName})`, () => {
  let server: TestServer;
  let noInterval: TestServer;
  beforeAll(async () => {
    [server, noInterval] = await Promise.all([startTestServer(), startTestServer({ REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: '0' })]);
  });
  afterAll(() => Promise.all([server.close(), noInterval.close()]));

  /** A grant whose first refresh was answered to nobody: the client still holds the spent token. */
  async function lostRefresh(on: TestServer) {
    const issued = await issueTokens(on);
    const lost = (await refresh(on, issued.client, issued.refresh_token)).json();
    expect(lost.refresh_token).toBeDefined();
    return { ...issued, lost };
  }

  async function grantRevocation(on: TestServer, refreshToken: string) {
    const { rows } = await on.services.db.query<{ revoked_reason: string | null }>(
      'SELECT g.revoked_reason FROM grants g JOIN refresh_tokens rt ON rt.grant_id = g.id WHERE rt.token_hash = $1',
      [sha256(refreshToken)],
    );
    return rows[0].revoked_reason;
  }

  /** Moves the family's last spend `seconds` into the past, as waiting would. */
  async function spentAgo(on: TestServer, refreshToken: string, seconds: number) {
    await on.services.db.query(
      `UPDATE refresh_tokens SET used_at = used_at - make_interval(secs => $2)
       WHERE used_at IS NOT NULL AND grant_id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1)`,
      [sha256(refreshToken), seconds],
    );
  }

  it('answers a retry within the interval with a new pair, and the unused successor stops working', async () => {
    const { client, refresh_token, lost } = await lostRefresh(server);
    const retried = await refresh(server, client, refresh_token);
    expect(retried.statusCode).toBe(200);
    const pair = retried.json();
    expect(pair.refresh_token).not.toBe(lost.refresh_token);
    expect((await userinfo(server, pair.access_token)).statusCode).toBe(200);

    // A second retry is a retry too; the pair it replaces stops working in turn.
    const again = (await refresh(server, client, refresh_token)).json();
    const { rows } = await server.services.db.query<{ token_hash: string }>(
      `SELECT token_hash FROM refresh_tokens WHERE used_at IS NULL AND grant_id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1)`,
      [sha256(refresh_token)],
    );
    expect(rows).toEqual([{ token_hash: sha256(again.refresh_token) }]);
    const next = await refresh(server, client, again.refresh_token);
    expect(next.statusCode).toBe(200);
    expect(await grantRevocation(server, refresh_token)).toBeNull();
  });

  it('treats the discarded successor, presented later, as reuse: it revokes the family', async () => {
    // The token was stolen and retried by the thief: the rightful client's successor comes back too late.
    const { client, refresh_token, lost } = await lostRefresh(server);
    const thief = (await refresh(server, client, refresh_token)).json();
    const late = await refresh(server, client, lost.refresh_token);
    expect(late.statusCode).toBe(400);
    expect(late.json().error).toBe('invalid_grant');
    expect(await grantRevocation(server, refresh_token)).toBe('refresh_token_reuse');
    expect((await refresh(server, client, thief.refresh_token)).json().error).toBe('invalid_grant');
    expect((await userinfo(server, thief.access_token)).statusCode).toBe(401);
  });

  it('treats a retry after the successor was used as theft: invalid_grant and the family revoked', async () => {
    const { client, refresh_token, lost } = await lostRefresh(server);
    const used = (await refresh(server, client, lost.refresh_token)).json();
    const retried = await refresh(server, client, refresh_token);
    expect(retried.statusCode).toBe(400);
    expect(retried.json().error).toBe('invalid_grant');
    expect(await grantRevocation(server, refresh_token)).toBe('refresh_token_reuse');
    const { rows } = await server.services.db.query<{ event: string }>(
      `SELECT event FROM audit_events WHERE grant_id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1) ORDER BY id`,
      [sha256(refresh_token)],
    );
    expect(rows.map((r) => r.event).slice(-2)).toEqual(['reuse_detected', 'revoked']);
    expect((await refresh(server, client, used.refresh_token)).json().error).toBe('invalid_grant');
  });

  it('treats a retry after the interval as theft', async () => {
    const { client, refresh_token } = await lostRefresh(server);
    await spentAgo(server, refresh_token, 31);
    expect((await refresh(server, client, refresh_token)).json().error).toBe('invalid_grant');
    expect(await grantRevocation(server, refresh_token)).toBe('refresh_token_reuse');
  });

  it('with REFRESH_TOKEN_REUSE_INTERVAL_SECONDS=0, treats every reuse as theft, as before', async () => {
    const { client, refresh_token, lost } = await lostRefresh(noInterval);
    expect((await refresh(noInterval, client, refresh_token)).json().error).toBe('invalid_grant');
    expect(await grantRevocation(noInterval, refresh_token)).toBe('refresh_token_reuse');
    expect((await refresh(noInterval, client, lost.refresh_token)).json().error).toBe('invalid_grant');
  });

  it('retries only for the client authenticated', async () => {
    const { client, refresh_token } = await lostRefresh(server);
    expect((await refresh(server, { ...client, client_secret: 'wrong' }, refresh_token)).statusCode).toBe(401);
    // That spent nothing: the rightful client still gets its pair.
    expect((await refresh(server, client, refresh_token)).statusCode).toBe(200);
  });
});
