import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { insertCode, issueTokens, refresh as refreshTokens } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import {
  authorization,
  authorizationHeader,
  bodies,
  type Body,
  clientFields,
  clientFixtures,
  clientPersona,
  encodeBody,
  errorCode,
  expectJsonError,
  expectReached,
  type FieldSpec,
  type Fixtures,
  fuzz,
  FUZZ_TIMEOUT,
  hostile,
  mostlyValid,
  otherMethods,
  ref,
} from '../helpers/fuzz.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

interface TokenInput {
  method: string;
  body: Body;
  authorization: unknown;
}

// Generated token requests; see helpers/fuzz.ts for what every run asserts.
describe(`fuzzing POST /token (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;
  let agent: Awaited<ReturnType<TestServer['createAgent']>>;

  const client = (who: string) => ({
    client_id: fixtures[`${who}_client_id`] as string,
    client_secret: fixtures[`${who}_client_secret`] as string,
    redirect_uris: [fixtures[`${who}_redirect_uri`] as string],
  });
  const codeFor = (who: string, agentId: string, expiresInSeconds?: number) =>
    insertCode(server.services, { clientId: client(who).client_id, agentId, redirectUri: client(who).redirect_uris[0], expiresInSeconds });

  beforeAll(async () => {
    server = await startTestServer();
    fixtures = await clientFixtures(server);
    agent = await server.createAgent();
    const inactiveAgent = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${inactiveAgent.agent_id}`, { active: false });

    const fresh = await codeFor('a', agent.agent_id);
    const spent = await issueTokens(server, { client: client('a'), agent });
    const rotated = await issueTokens(server, { client: client('a'), agent });
    if ((await refreshTokens(server, client('a'), rotated.refresh_token)).statusCode !== 200) throw new Error('refresh failed');
    Object.assign(fixtures, {
      fresh_code: fresh.code,
      fresh_verifier: fresh.verifier,
      spent_code: spent.code,
      expired_code: (await codeFor('a', agent.agent_id, -60)).code,
      inactive_agent_code: (await codeFor('a', inactiveAgent.agent_id)).code,
      b_code: (await codeFor('b', agent.agent_id)).code,
      live_rt: spent.refresh_token,
      spent_rt: rotated.refresh_token,
      b_rt: (await issueTokens(server, { client: client('b'), agent })).refresh_token,
    });
  });
  afterAll(() => server.close());

  /** After a run that wrote: a new code if the fresh one was spent, new tokens if the live ones died. */
  async function refresh() {
    const { rows } = await server.services.db.query<{ used: boolean }>('SELECT used_at IS NOT NULL AS used FROM auth_codes WHERE code_hash = $1', [
      sha256(fixtures.fresh_code as string),
    ]);
    if (rows[0].used) {
      const fresh = await codeFor('a', agent.agent_id);
      Object.assign(fixtures, { fresh_code: fresh.code, fresh_verifier: fresh.verifier });
    }
    for (const [name, who] of [
      ['live_rt', 'a'],
      ['b_rt', 'b'],
    ]) {
      const live = await server.services.store.grants.findRefreshToken(sha256(fixtures[name] as string), client(who).client_id);
      if (!live) fixtures[name] = (await issueTokens(server, { client: client(who), agent })).refresh_token;
    }
  }

  const grantFields = (grant: string): FieldSpec =>
    grant === 'authorization_code'
      ? {
          code: [
            fc.oneof(
              { weight: 6, arbitrary: ref('fresh_code') },
              fc.constantFrom('spent_code', 'expired_code', 'inactive_agent_code', 'b_code').chain(ref),
            ),
            hostile({ like: 'fresh_code', json: true }),
          ],
          code_verifier: [
            ref('fresh_verifier'),
            fc.oneof(fc.constantFrom('a'.repeat(42), 'a'.repeat(129), '~'.repeat(43)), hostile({ like: 'fresh_verifier', json: true })),
          ],
          redirect_uri: [ref('a_redirect_uri'), hostile({ like: 'a_redirect_uri', json: true })],
        }
      : {
          refresh_token: [fc.oneof({ weight: 4, arbitrary: ref('live_rt') }, ref('spent_rt'), ref('b_rt')), hostile({ like: 'live_rt', json: true })],
          // Schema-valid scopes, some wider than the grant's.
          scope: [
            fc.constantFrom(undefined, 'openid', 'email profile', 'openid email profile', 'admin', 'openid offline_access'),
            hostile({ json: true }),
          ],
        };

  const tokenRequest: fc.Arbitrary<TokenInput> = fc
    .tuple(fc.constantFrom('authorization_code', 'refresh_token'), clientPersona)
    .chain(([grant, persona]) =>
      fc.record({
        method: fc.oneof({ weight: 14, arbitrary: fc.constant('POST') }, fc.constantFrom(...otherMethods('POST'))),
        body: bodies(
          mostlyValid({
            grant_type: [
              fc.constant(grant),
              fc.oneof(
                fc.constantFrom('client_credentials', 'password', 'implicit', 'AUTHORIZATION_CODE', 'refresh_token '),
                hostile({ json: true }),
              ),
            ],
            ...grantFields(grant),
            ...clientFields(persona),
          }),
          'form',
        ),
        authorization: authorizationHeader(persona),
      }),
    );

  it('no 5xx, {error, error_description} on failure, nothing written when refused but by design', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 500,
      fixtures: () => fixtures,
      refresh,
      arbitrary: tokenRequest,
      request: ({ method, body, authorization: header }: TokenInput) => {
        const encoded = method === 'GET' || method === 'OPTIONS' ? { headers: {} } : encodeBody(body);
        return { method: method as 'POST', url: '/token', ...encoded, headers: { ...encoded.headers, ...authorization(header) } };
      },
      check: ({ res }) => {
        if (res.statusCode !== 200) return expectJsonError(res);
        expect(res.headers['cache-control']).toBe('no-store');
        expect(Object.keys(res.json()).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
      },
      // By design: a code refused at exchange stays spent, and a replayed code or refresh token revokes its grant.
      mayChange: ({ input, res }) => {
        if (errorCode(res) !== 'invalid_grant') return [];
        const grantType = input.body.kind === 'text' ? undefined : (input.body.value as { grant_type?: unknown }).grant_type;
        return grantType === 'authorization_code' ? ['auth_codes', 'grants'] : ['grants'];
      },
    });
    console.log(JSON.stringify([...report.statuses]), JSON.stringify([...report.codes]));
    expectReached(report, {
      statuses: [200, 401, 404, 413, 415],
      codes: ['invalid_request', 'invalid_client', 'invalid_grant', 'unsupported_grant_type', 'invalid_scope'],
    });
  });
});
