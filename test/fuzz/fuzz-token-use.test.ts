import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { introspect, issueTokens, revoke } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import {
  authorization,
  authorizationHeader,
  bodies,
  type Body,
  clientFields,
  clientFixtures,
  clientPersona,
  Derived,
  encodeBody,
  expectJsonError,
  expectReached,
  type Fixtures,
  fuzz,
  FUZZ_TIMEOUT,
  hostile,
  mostlyValid,
  nastyString,
  otherMethods,
  ref,
  wrongType,
} from '../helpers/fuzz.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value) ?? '', 'utf8').toString('base64url');
const OTHER_KEY = randomBytes(32);

interface JwtInput {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  signature: 'real key' | 'other key' | 'none' | 'garbage';
  garbage: string;
}

// Generated bearer tokens, introspection and revocation requests; see helpers/fuzz.ts for what every run asserts.
describe(`fuzzing /userinfo, /introspect and /revoke (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;
  let agent: Awaited<ReturnType<TestServer['createAgent']>>;

  const client = (who: string) => ({
    client_id: fixtures[`${who}_client_id`] as string,
    client_secret: fixtures[`${who}_client_secret`] as string,
    redirect_uris: [fixtures[`${who}_redirect_uri`] as string],
  });

  async function tokensFor(who: string) {
    const { access_token: at, refresh_token: rt } = await issueTokens(server, { client: client(who), agent });
    const jti = JSON.parse(Buffer.from(at.split('.')[1], 'base64url').toString()).jti;
    Object.assign(fixtures, { [`${who}_at`]: at, [`${who}_rt`]: rt, [`${who}_jti`]: jti });
  }

  beforeAll(async () => {
    server = await startTestServer();
    fixtures = await clientFixtures(server);
    agent = await server.createAgent();
    await tokensFor('a');
    await tokensFor('b');
    const revoked = await issueTokens(server, { client: client('a'), agent });
    await revoke(server, client('a'), revoked.access_token);
    const now = Math.floor(Date.now() / 1000);
    Object.assign(fixtures, {
      revoked_at: revoked.access_token,
      agent_id: agent.agent_id,
      issuer: ISSUER,
      kid: server.services.keyring.current.kid,
      iat: now,
      exp: now + 3600,
    });
  });
  afterAll(() => server.close());

  /** After a revocation: new tokens for the client that lost them. */
  async function refresh() {
    for (const who of ['a', 'b']) {
      const [at, rt] = await Promise.all([
        introspect(server, client(who), fixtures[`${who}_at`] as string),
        introspect(server, client(who), fixtures[`${who}_rt`] as string),
      ]);
      if (!at.json().active || !rt.json().active) await tokensFor(who);
    }
  }

  function signJwt({ header, claims, signature, garbage }: JwtInput): string {
    const input = `${b64url(header)}.${b64url(claims)}`;
    const mac = (key: Uint8Array) => createHmac('sha256', key).update(input).digest('base64url');
    const sig = {
      'real key': () => mac(server.services.keyring.current.key),
      'other key': () => mac(OTHER_KEY),
      none: () => '',
      garbage: () => garbage,
    };
    return `${input}.${sig[signature]()}`;
  }

  /** JWTs that look like ours: alg none, other algs, another key, every claim valid or not. */
  const jwt = fc
    .record({
      header: mostlyValid({
        alg: [fc.constant('HS256'), fc.oneof(fc.constantFrom('none', 'None', 'HS512', 'RS256', 'ES256', 'hs256', ''), wrongType)],
        typ: [fc.constant('at+jwt'), fc.oneof(fc.constantFrom('JWT', 'AT+JWT', 'application/at+jwt'), hostile({ json: true }))],
        kid: [ref('kid'), hostile({ like: 'kid', json: true })],
      }),
      claims: mostlyValid({
        iss: [ref('issuer'), hostile({ like: 'issuer', json: true })],
        sub: [ref('agent_id'), hostile({ like: 'agent_id', json: true })],
        aud: [ref('a_client_id'), hostile({ json: true })],
        client_id: [fc.oneof(ref('a_client_id'), ref('b_client_id')), hostile({ like: 'a_client_id', json: true })],
        scope: [fc.constantFrom('openid email', 'profile', ''), hostile({ json: true })],
        iat: [ref('iat'), fc.oneof(fc.constantFrom(-1, 0, 1e20, 1.5, Number.MAX_SAFE_INTEGER), wrongType)],
        exp: [ref('exp'), fc.oneof(fc.constantFrom(-1, 0, 1, 1e20, 1.5, Number.MAX_SAFE_INTEGER), fc.integer(), wrongType)],
        jti: [ref('a_jti'), hostile({ like: 'a_jti', json: true })],
        model: [fc.constant('test-model-1'), hostile({ json: true })],
      }),
      signature: fc.constantFrom<JwtInput['signature']>('real key', 'real key', 'real key', 'other key', 'none', 'garbage'),
      garbage: nastyString,
    })
    .map((input) => new Derived('jwt', input, (resolved) => signJwt(resolved as JwtInput)));

  /** Our real tokens, forged ones, and strings that merely look like tokens. */
  const token = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('a_at', 'a_rt', 'b_at', 'b_rt', 'revoked_at').chain(ref) },
    { weight: 3, arbitrary: jwt },
    { weight: 2, arbitrary: hostile({ like: 'a_at', json: true }) },
    { weight: 1, arbitrary: fc.constantFrom('aa_rt_', 'a.b.c', 'e30.e30.', '..', 'aa_rt_x'.repeat(2000), 'e30.'.repeat(3000)) },
  );

  it('GET /userinfo: no 5xx, 401 in the error format for any bad header, never a write', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 400,
      fixtures: () => fixtures,
      readOnly: true,
      arbitrary: fc.record({
        method: fc.oneof({ weight: 14, arbitrary: fc.constant('GET') }, fc.constantFrom(...otherMethods('GET'))),
        scheme: fc.oneof(
          { weight: 8, arbitrary: fc.constant('Bearer ') },
          fc.constantFrom('bearer ', 'Bearer  ', 'BEARER ', 'Bearer\t', 'Basic ', 'Token ', '', 'Bearer'),
        ),
        token,
        suffix: fc.oneof({ weight: 8, arbitrary: fc.constant('') }, fc.constantFrom(' ', '  ', ' x', ',', '=', '\t'), nastyString),
      }),
      request: ({ method, scheme, token: value, suffix }: { method: string; scheme: string; token: unknown; suffix: string }) => ({
        method: method as 'GET',
        url: '/userinfo',
        headers: authorization(value === undefined ? undefined : `${scheme}${typeof value === 'string' ? value : JSON.stringify(value)}${suffix}`),
      }),
      check: ({ res }) => {
        if (res.statusCode === 200) {
          const body = res.json();
          expect(typeof body.sub).toBe('string');
          expect(Object.keys(body).filter((k) => k !== 'sub' && k !== 'email')).toEqual([]);
          return;
        }
        expectJsonError(res);
        if (res.statusCode === 401) {
          expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'missing or invalid access token' });
          expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
        }
      },
    });
    expectReached(report, { statuses: [200, 401, 404] });
  });

  interface TokenRequest {
    method: string;
    body: Body;
    authorization: unknown;
  }
  const tokenRequest: fc.Arbitrary<TokenRequest> = clientPersona.chain((persona) =>
    fc.record({
      method: fc.oneof({ weight: 14, arbitrary: fc.constant('POST') }, fc.constantFrom(...otherMethods('POST'))),
      body: bodies(
        mostlyValid({
          token: [token, hostile({ json: true })],
          token_type_hint: [fc.constantFrom(undefined, 'access_token', 'refresh_token'), hostile({ json: true })],
          ...clientFields(persona),
        }),
        'form',
      ),
      authorization: authorizationHeader(persona),
    }),
  );
  const send =
    (url: string) =>
    ({ method, body, authorization: header }: TokenRequest) => {
      const encoded = method === 'GET' || method === 'OPTIONS' ? { headers: {} } : encodeBody(body);
      return { method: method as 'POST', url, ...encoded, headers: { ...encoded.headers, ...authorization(header) } };
    };

  it('POST /introspect: no 5xx, the error format, {active} for any token, never a write', async () => {
    const active = new Map<boolean, number>();
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 300,
      fixtures: () => fixtures,
      readOnly: true,
      arbitrary: tokenRequest,
      request: send('/introspect'),
      check: ({ res }) => {
        if (res.statusCode !== 200) return expectJsonError(res);
        const body = res.json();
        active.set(body.active, (active.get(body.active) ?? 0) + 1);
        if (!body.active) expect(body).toEqual({ active: false });
        else
          expect(body).toMatchObject({
            sub: expect.any(String),
            client_id: expect.any(String),
            token_type: expect.stringMatching(/^(access|refresh)_token$/),
          });
      },
    });
    expectReached(report, { statuses: [200, 404, 413, 415], codes: ['invalid_client', 'invalid_request'] });
    expect([...active.keys()].sort()).toEqual([false, true]);
  });

  it('POST /revoke: no 5xx, the error format, 200 with {}, nothing written when refused', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 300,
      fixtures: () => fixtures,
      refresh,
      arbitrary: tokenRequest,
      request: send('/revoke'),
      check: ({ res }) => {
        if (res.statusCode === 200) expect(res.body).toBe('{}');
        else expectJsonError(res);
      },
    });
    expectReached(report, { statuses: [200, 404, 413, 415], codes: ['invalid_client', 'invalid_request'] });
  });
});
