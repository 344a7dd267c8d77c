import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import type { EventPayloads } from '../../src/events/catalogue.js';
import { Events } from '../../src/events/emitter.js';
import type { Log } from '../../src/logger.js';
import { exchangeCode, issueTokens, refresh, revoke } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { signInToCode } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('the event emitter', () => {
  it('calls every subscriber in order; one that fails is logged and stops neither the others nor the emitter', async () => {
    const errors: unknown[] = [];
    const log = { error: (line: unknown) => void errors.push(line) } as unknown as Log;
    const events = new Events();
    const heard: string[] = [];
    events.on('grant.refreshed', (grant) => void heard.push(`first ${grant.grant_id}`));
    events.on('grant.refreshed', () => {
      throw new Error('sync failure');
    });
    events.on('grant.refreshed', async () => {
      await sleep(1);
      throw new Error('async failure');
    });
    events.on('grant.refreshed', (grant) => void heard.push(`last ${grant.grant_id}`));
    events.on('grant.issued', () => void heard.push('another event'));

    expect(() => events.emit('grant.refreshed', { grant_id: 'g1', client_id: 'c', agent_id: 'a', model: 'm' }, { log })).not.toThrow();
    expect(heard).toEqual(['first g1', 'last g1']);
    await sleep(20);
    expect(errors).toEqual([
      { event: 'grant.refreshed', err: { message: 'sync failure' } },
      { event: 'grant.refreshed', err: { message: 'async failure' } },
    ]);
  });
});

describe(`every grant that ends is announced once, with its reason (${storeName})`, () => {
  let server: TestServer;
  const ended: EventPayloads['grant.ended'][] = [];
  const revokedTokens: EventPayloads['access-token.revoked'][] = [];
  beforeAll(async () => {
    server = await startTestServer();
    server.services.events.on('grant.ended', (grant) => void ended.push(grant));
    server.services.events.on('access-token.revoked', (token) => void revokedTokens.push(token));
  });
  afterAll(() => server.close());

  const grantIdOfRefresh = async (refreshToken: string) =>
    (await server.services.db.query<{ grant_id: string }>('SELECT grant_id FROM refresh_tokens WHERE token_hash = $1', [sha256(refreshToken)]))
      .rows[0].grant_id;

  it('when its client revokes its refresh token (RFC 7009), and not when it revokes an access token', async () => {
    const { client, agent, access_token, refresh_token } = await issueTokens(server);
    const grantId = await grantIdOfRefresh(refresh_token);
    const before = ended.length;
    await revoke(server, client, access_token);
    expect(ended.length).toBe(before);
    expect(revokedTokens.at(-1)).toEqual({
      grant_id: grantId,
      client_id: client.client_id,
      agent_id: agent.agent_id,
      model: 'test-model-1',
      reason: 'client_revocation',
    });
    await revoke(server, client, refresh_token);
    // Revoking it again ends nothing more.
    await revoke(server, client, refresh_token);
    expect(ended.slice(before)).toEqual([
      { grant_id: grantId, client_id: client.client_id, agent_id: agent.agent_id, model: 'test-model-1', reason: 'client_revocation' },
    ]);
  });

  it('when a spent code or refresh token comes back', async () => {
    const { client, code, verifier } = await signInToCode(server);
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    const before = ended.length;
    // An intercepted code comes without its verifier (the same exchange again is a retry: test/tokens/code-retry.test.ts).
    await exchangeCode(server, client, code, 'x'.repeat(43));
    const replayed = ended.slice(before);
    expect(replayed.map((g) => [g.grant_id, g.reason])).toEqual([[await grantIdOfRefresh(tokens.refresh_token), 'code_replay']]);

    const other = await issueTokens(server);
    const successor = (await refresh(server, other.client, other.refresh_token)).json();
    await refresh(server, other.client, successor.refresh_token);
    await refresh(server, other.client, other.refresh_token);
    expect(ended.slice(before + 1).map((g) => g.reason)).toEqual(['refresh_token_reuse']);
  });

  it('when an operator revokes at any level, one event per grant', async () => {
    const { client, agent } = await issueTokens(server);
    await issueTokens(server, { client, agent });
    const before = ended.length;
    expect((await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).json).toEqual({ revoked: 2 });
    expect(ended.slice(before).map((g) => [g.agent_id, g.reason])).toEqual([
      [agent.agent_id, 'admin_agent'],
      [agent.agent_id, 'admin_agent'],
    ]);
    // Nothing left to end, and an unknown agent ends nothing.
    expect((await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).json).toEqual({ revoked: 0 });
    expect((await server.adminCall('POST', '/admin/agents/agent_nobody/revoke-grants')).statusCode).toBe(404);
    expect(ended.length).toBe(before + 2);
  });
});
