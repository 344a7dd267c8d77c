import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyringFrom } from '../../src/crypto/keyring.js';
import { basicAuth, codeForClient, type Credentials, exchangeCode, introspect, issueTokens, postForm, refresh, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { authorizeUrl, bindingCookie, pkce, signInToCode, startAuthorize } from '../helpers/flow.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// A well-formed code_verifier that is not the one of the sign-in.
const OTHER_VERIFIER = 'x'.repeat(43);

function expectOAuthError(res: { statusCode: number; json(): any }, status: number, error: string) {
  expect(res.statusCode).toBe(status);
  expect(res.json()).toEqual({ error, error_description: expect.any(String) });
}

describe(`POST /token (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  async function newCode(scope?: string) {
    const client = await server.createClient();
    return { client, ...(await codeForClient(server, client, { scope })) };
  }

  describe('authorization_code', () => {
    it('exchanges a code from the real sign-in flow for tokens, with no-store headers', async () => {
      const { client, agent, code, verifier } = await signInToCode(server, { scope: 'openid email', model: 'model-x' });
      const res = await exchangeCode(server, client, code, verifier);
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.pragma).toBe('no-cache');
      const body = res.json();
      expect(body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 3600,
        refresh_token: expect.stringMatching(/^aa_rt_/),
        scope: 'openid email',
      });
      expect(decodeJwt(body.access_token)).toMatchObject({ sub: agent.agent_id, aud: client.client_id, model: 'model-x' });
      expect((await userinfo(server, body.access_token)).json()).toEqual({ sub: agent.agent_id, email: agent.email });
    });

    it('signs the access token with exactly the header and claims docs/protocol.md lists', async () => {
      const { client, agent, access_token } = await issueTokens(server, { scope: 'email' });
      const header = decodeProtectedHeader(access_token);
      expect(header).toEqual({ alg: 'HS256', typ: 'at+jwt', kid: keyringFrom(['test-jwt-secret-that-is-at-least-32-bytes-long']).current.kid });
      const claims = decodeJwt(access_token);
      expect(Object.keys(claims).sort()).toEqual(['aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'model', 'scope', 'sub']);
      expect(claims).toEqual({
        iss: ISSUER,
        sub: agent.agent_id,
        aud: client.client_id,
        client_id: client.client_id,
        scope: 'email',
        iat: expect.any(Number),
        exp: (claims.iat as number) + 3600,
        jti: expect.any(String),
        model: 'test-model-1',
      });
      expect(Math.abs((claims.iat as number) - Date.now() / 1000)).toBeLessThan(10);
      expect(JSON.stringify(claims)).not.toContain(agent.email);
      // A website that validates locally with the shared secret, here with jose, accepts it.
      const secret = new TextEncoder().encode('test-jwt-secret-that-is-at-least-32-bytes-long');
      const verified = await jwtVerify(access_token, secret, { algorithms: ['HS256'], typ: 'at+jwt', issuer: ISSUER, audience: client.client_id });
      expect(verified.payload).toEqual(claims);
    });

    it('refuses a wrong code_verifier with invalid_grant, and the code is spent', async () => {
      const { client, code, verifier } = await newCode();
      const wrong = await exchangeCode(server, client, code, 'x'.repeat(43));
      expectOAuthError(wrong, 400, 'invalid_grant');
      expectOAuthError(await exchangeCode(server, client, code, verifier), 400, 'invalid_grant');
    });

    it('refuses a malformed code_verifier (too short, too long, bad characters) before touching the code', async () => {
      const { client, code, verifier } = await newCode();
      for (const bad of [verifier.slice(0, 42), 'a'.repeat(129), `${verifier.slice(0, 42)}+`, `${verifier.slice(0, 42)} `]) {
        expectOAuthError(await exchangeCode(server, client, code, bad), 400, 'invalid_request');
      }
      expectOAuthError(await exchangeCode(server, client, code, verifier, { code_verifier: undefined }), 400, 'invalid_request');
      expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
    });

    it('refuses a redirect_uri other than the authorization request one, and a missing one', async () => {
      const client = await server.createClient(['https://shop.example/cb', 'https://shop.example/other']);
      const a = await codeForClient(server, client);
      expectOAuthError(await exchangeCode(server, client, a.code, a.verifier, { redirect_uri: undefined }), 400, 'invalid_request');
      const wrong = await exchangeCode(server, client, a.code, a.verifier, { redirect_uri: 'https://shop.example/other' });
      expectOAuthError(wrong, 400, 'invalid_grant');
    });

    it('refuses an expired code', async () => {
      const client = await server.createClient();
      const { code, verifier } = await codeForClient(server, client, { expiresInSeconds: -1 });
      expectOAuthError(await exchangeCode(server, client, code, verifier), 400, 'invalid_grant');
    });

    it('refuses an unknown code and a code issued to another client (which stays usable by its own)', async () => {
      const { client, code, verifier } = await newCode();
      expectOAuthError(await exchangeCode(server, client, 'aa_code_nonsense', verifier), 400, 'invalid_grant');
      const other = await server.createClient();
      expectOAuthError(await exchangeCode(server, other, code, verifier), 400, 'invalid_grant');
      expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
    });

    it('refuses the code of an agent deactivated since the sign-in', async () => {
      const { client, agent, code, verifier } = await newCode();
      await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false });
      expectOAuthError(await exchangeCode(server, client, code, verifier), 400, 'invalid_grant');
    });

    it('refuses a replayed code and revokes every token issued from it', async () => {
      const { client, code, verifier } = await signInToCode(server);
      const first = await exchangeCode(server, client, code, verifier);
      expect(first.statusCode).toBe(200);
      const { access_token, refresh_token } = first.json();
      expect((await userinfo(server, access_token)).statusCode).toBe(200);

      // An intercepted code comes without its verifier: the same exchange again is a retry (test/tokens/code-retry.test.ts).
      expectOAuthError(await exchangeCode(server, client, code, OTHER_VERIFIER), 400, 'invalid_grant');

      expect((await userinfo(server, access_token)).statusCode).toBe(401);
      expectOAuthError(await refresh(server, client, refresh_token), 400, 'invalid_grant');
      expect((await introspect(server, client, access_token)).json()).toEqual({ active: false });
      expect((await introspect(server, client, refresh_token)).json()).toEqual({ active: false });
    });

    it('issues tokens once when the same code is exchanged concurrently (without a reuse interval)', async () => {
      // With one, the same exchange again is a retry of a lost answer (test/tokens/code-retry.test.ts).
      const strict = await startTestServer({ REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: '0' });
      try {
        const { client, code, verifier } = await signInToCode(strict);
        const results = await Promise.all([1, 2, 3].map(() => exchangeCode(strict, client, code, verifier)));
        expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400, 400]);
        // The replays revoked what the winner got.
        const winner = results.find((r) => r.statusCode === 200)!.json();
        expect((await userinfo(strict, winner.access_token)).statusCode).toBe(401);
      } finally {
        await strict.close();
      }
    });

    it('accepts a JSON body', async () => {
      const { client, code, verifier } = await newCode();
      const res = await server.app.inject({
        method: 'POST',
        url: '/token',
        payload: {
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: client.redirect_uris[0],
          client_id: client.client_id,
          client_secret: client.client_secret,
        },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().token_type).toBe('Bearer');
    });
  });

  describe('client authentication', () => {
    it.each([
      ['HTTP Basic (form-urlencoded id and secret)', false],
      ['Basic with the same client_id repeated in the body', true],
    ])('accepts %s', async (_name, repeatId) => {
      const { client, code, verifier } = await newCode();
      const res = await postForm(
        server,
        '/token',
        {
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: client.redirect_uris[0],
          client_id: repeatId ? client.client_id : undefined,
        },
        { authorization: basicAuth(client) },
      );
      expect(res.statusCode).toBe(200);
    });

    it('refuses two authentication methods at once with invalid_request', async () => {
      const { client, code, verifier } = await newCode();
      const res = await postForm(
        server,
        '/token',
        {
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: client.redirect_uris[0],
          client_id: client.client_id,
          client_secret: client.client_secret,
        },
        { authorization: basicAuth(client) },
      );
      expectOAuthError(res, 400, 'invalid_request');
    });

    it('answers a wrong secret, an unknown client, an inactive client and no credentials with one 401 invalid_client', async () => {
      const { client, code, verifier } = await newCode();
      const inactive = await server.createClient();
      await server.adminCall('PATCH', `/admin/clients/${inactive.client_id}`, { active: false });
      const attempts = [
        await exchangeCode(server, client, code, verifier, { client_secret: `${client.client_secret}x` }),
        await exchangeCode(server, client, code, verifier, { client_id: 'client_unknown' }),
        await exchangeCode(server, client, code, verifier, { client_id: inactive.client_id, client_secret: inactive.client_secret }),
        await exchangeCode(server, client, code, verifier, { client_secret: undefined }),
        await exchangeCode(server, client, code, verifier, { client_id: undefined, client_secret: undefined }),
        await postForm(
          server,
          '/token',
          { grant_type: 'authorization_code', code, code_verifier: verifier },
          {
            authorization: basicAuth({ client_id: client.client_id, client_secret: 'wrong' }),
          },
        ),
      ];
      const bodies = attempts.map((res) => {
        expect(res.statusCode).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^Basic/);
        return res.body;
      });
      expect(new Set(bodies).size).toBe(1);
      expect(JSON.parse(bodies[0])).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
      // None of the failed attempts spent the code.
      expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
    });

    it('refuses malformed Basic credentials with invalid_request', async () => {
      for (const authorization of [
        'Basic !!!',
        `Basic ${Buffer.from('no-colon').toString('base64')}`,
        `Basic ${Buffer.from('%E0%A4%A:x').toString('base64')}`,
      ]) {
        expectOAuthError(
          await postForm(server, '/token', { grant_type: 'refresh_token', refresh_token: 'x' }, { authorization }),
          400,
          'invalid_request',
        );
      }
    });
  });

  describe('grant_type', () => {
    it('requires grant_type and refuses unknown ones', async () => {
      const client = await server.createClient();
      const creds = { client_id: client.client_id, client_secret: client.client_secret };
      expectOAuthError(await postForm(server, '/token', creds), 400, 'invalid_request');
      for (const grantType of ['password', 'client_credentials', '__proto__', 'constructor', 'toString']) {
        expectOAuthError(await postForm(server, '/token', { grant_type: grantType, ...creds }), 400, 'unsupported_grant_type');
      }
    });
  });

  describe('parameters sent without a value (RFC 6749 §3.1)', () => {
    it('treats them as omitted, in a form and in JSON, on /token, /introspect and /revoke', async () => {
      const { client, access_token, refresh_token } = await issueTokens(server, { scope: 'openid email' });
      const creds = { client_id: client.client_id, client_secret: client.client_secret };
      // An empty grant_type is a missing one, not an unsupported one.
      expect((await postForm(server, '/token', { grant_type: '', ...creds })).json()).toMatchObject({
        error: 'invalid_request',
        error_description: 'grant_type is required',
      });
      // An empty client_id beside HTTP Basic names no second client; an empty scope keeps the granted one.
      const basic = { authorization: basicAuth(client) };
      const rotated = await postForm(server, '/token', { grant_type: 'refresh_token', refresh_token, client_id: '', scope: '' }, basic);
      expect(rotated.statusCode).toBe(200);
      expect(rotated.json().scope).toBe('openid email');
      // An empty secret is no secret.
      expectOAuthError(
        await postForm(server, '/introspect', { token: access_token, client_id: client.client_id, client_secret: '' }),
        401,
        'invalid_client',
      );
      for (const url of ['/introspect', '/revoke']) {
        const empty = await postForm(server, url, { token: '', token_type_hint: '', ...creds });
        expect(empty.json()).toEqual({ error: 'invalid_request', error_description: 'token is required' });
        const json = await server.app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ token: '', ...creds }),
        });
        expect(json.json()).toEqual({ error: 'invalid_request', error_description: 'token is required' });
      }
      const hinted = await postForm(server, '/introspect', { token: access_token, token_type_hint: '', ...creds }, {});
      expect(hinted.json().active).toBe(true);
    });
  });

  describe('refresh_token', () => {
    it('rotates the refresh token on every use', async () => {
      const first = await issueTokens(server);
      const res = await refresh(server, first.client, first.refresh_token);
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      const second = res.json();
      expect(second).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 3600,
        refresh_token: expect.stringMatching(/^aa_rt_/),
        scope: 'openid email profile',
      });
      expect(second.refresh_token).not.toBe(first.refresh_token);
      expect(decodeJwt(second.access_token)).toMatchObject({ sub: first.agent.agent_id, client_id: first.client.client_id });
      expect((await userinfo(server, second.access_token)).statusCode).toBe(200);
      const third = await refresh(server, first.client, second.refresh_token);
      expect(third.statusCode).toBe(200);
      const { rows } = await server.services.db.query<{ last_refreshed_at: Date | null }>(`SELECT last_refreshed_at FROM grants WHERE id = $1`, [
        String(decodeJwt(second.access_token).jti).split('.')[0],
      ]);
      expect(rows[0].last_refreshed_at).toBeInstanceOf(Date);
    });

    it('treats reuse of a spent refresh token as theft: invalid_grant and the whole family is revoked', async () => {
      const first = await issueTokens(server);
      const second = (await refresh(server, first.client, first.refresh_token)).json();
      // Its successor was used, so this is no retry of a lost answer (test/tokens/refresh-retry.test.ts).
      const third = (await refresh(server, first.client, second.refresh_token)).json();
      expectOAuthError(await refresh(server, first.client, first.refresh_token), 400, 'invalid_grant');
      // The newest refresh token and every access token of the family are dead too.
      expectOAuthError(await refresh(server, first.client, third.refresh_token), 400, 'invalid_grant');
      expect((await userinfo(server, third.access_token)).statusCode).toBe(401);
      expect((await userinfo(server, second.access_token)).statusCode).toBe(401);
      expect((await userinfo(server, first.access_token)).statusCode).toBe(401);
    });

    it('narrows the scope of the access token, keeps the refresh token scope, and never widens', async () => {
      const first = await issueTokens(server, { scope: 'openid email' });
      const narrowed = await refresh(server, first.client, first.refresh_token, { scope: 'email' });
      expect(narrowed.statusCode).toBe(200);
      expect(narrowed.json().scope).toBe('email');
      expect(decodeJwt(narrowed.json().access_token).scope).toBe('email');

      const widened = await refresh(server, first.client, narrowed.json().refresh_token, { scope: 'email profile' });
      expectOAuthError(widened, 400, 'invalid_scope');
      expectOAuthError(await refresh(server, first.client, narrowed.json().refresh_token, { scope: 'admin' }), 400, 'invalid_scope');

      // A refused refresh leaves the presented token usable; without scope it gets the granted scope back (RFC 6749 §6).
      const again = await refresh(server, first.client, narrowed.json().refresh_token);
      expect(again.statusCode).toBe(200);
      expect(again.json().scope).toBe('openid email');
    });

    it('refuses the refresh token of another client without spending it', async () => {
      const first = await issueTokens(server);
      const other = await server.createClient();
      expectOAuthError(await refresh(server, other, first.refresh_token), 400, 'invalid_grant');
      expect((await refresh(server, first.client, first.refresh_token)).statusCode).toBe(200);
    });

    it('refuses unknown and missing refresh tokens, and those of a deactivated agent', async () => {
      const first = await issueTokens(server);
      expectOAuthError(await refresh(server, first.client, 'aa_rt_unknown'), 400, 'invalid_grant');
      expectOAuthError(
        await postForm(server, '/token', {
          grant_type: 'refresh_token',
          client_id: first.client.client_id,
          client_secret: first.client.client_secret,
        }),
        400,
        'invalid_request',
      );
      await server.adminCall('PATCH', `/admin/agents/${first.agent.agent_id}`, { active: false });
      expectOAuthError(await refresh(server, first.client, first.refresh_token), 400, 'invalid_grant');
    });
  });

  describe('malformed input', () => {
    it('answers bad bodies with a 4xx in the OAuth error format, never a 5xx', async () => {
      const { client } = await newCode();
      const creds = { client_id: client.client_id, client_secret: client.client_secret };
      const json = (payload: unknown) =>
        server.app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
      const responses = [
        await json({ grant_type: 'authorization_code', code: 42, ...creds }),
        await json({ grant_type: ['authorization_code'], ...creds }),
        await json({ grant_type: 'refresh_token', refresh_token: { $ne: null }, ...creds }),
        await json({ ...creds, client_id: [creds.client_id] }),
        await json(null),
        await json([1, 2]),
        await json('grant_type=refresh_token'),
        await json({ grant_type: 'refresh_token', refresh_token: 'x'.repeat(10_000), ...creds }),
        await json({
          grant_type: 'authorization_code',
          code: 'c',
          code_verifier: 'v'.repeat(600),
          redirect_uri: 'https://shop.example/callback',
          ...creds,
        }),
        await json({ grant_type: 'refresh_token', refresh_token: 'aa_rt_x', scope: 's'.repeat(2000), ...creds }),
        await postForm(server, '/token', { grant_type: ['refresh_token', 'refresh_token'], refresh_token: 'x', ...creds }),
        await postForm(server, '/token', { grant_type: 'refresh_token', refresh_token: ['a', 'b'], ...creds }),
        await postForm(server, '/token', {
          grant_type: 'refresh_token',
          refresh_token: 'x',
          client_id: [creds.client_id, 'y'],
          client_secret: creds.client_secret,
        }),
        await server.app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/json' }, payload: '{"grant_type":' }),
        await server.app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'text/plain' }, payload: 'grant_type=refresh_token' }),
        await server.app.inject({ method: 'POST', url: '/token' }),
        await postForm(server, '/token', {
          grant_type: 'authorization_code',
          code: '\u0000',
          code_verifier: 'a'.repeat(43),
          redirect_uri: 'x',
          ...creds,
        }),
      ];
      for (const res of responses) {
        expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, res.body).toBeLessThan(500);
        expect(res.json()).toEqual({ error: expect.any(String), error_description: expect.any(String) });
        expect(res.headers['cache-control']).toBe('no-store');
      }
    });
  });
});

describe(`access token lifetime and key rotation (${storeName})`, () => {
  const OLD = 'old-jwt-secret-that-is-at-least-32-bytes-long!';
  const NEW = 'new-jwt-secret-that-is-at-least-32-bytes-long!';
  // iat is in whole seconds, so a token is good for at least TTL - 1 seconds: room for the checks
  // that it works before it expires, even on a busy machine.
  const TTL = 5;
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ACCESS_TOKEN_TTL_SECONDS: TTL, JWT_SECRET: undefined, JWT_SECRETS: `${NEW},${OLD}` });
  });
  afterAll(() => server.close());

  it('signs new tokens with the first secret and still verifies tokens signed with an older one', async () => {
    const issued = await issueTokens(server);
    expect(issued.expires_in).toBe(TTL);
    expect(decodeProtectedHeader(issued.access_token).kid).toBe(keyringFrom([NEW]).current.kid);

    const claims = decodeJwt(issued.access_token);
    const resign = (secret: string, kid: string) =>
      new SignJWT({ ...claims, exp: Math.floor(Date.now() / 1000) + 60 })
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid })
        .sign(new TextEncoder().encode(secret));
    const oldKid = keyringFrom([OLD]).current.kid;
    expect((await userinfo(server, await resign(OLD, oldKid))).statusCode).toBe(200);
    expect((await introspect(server, issued.client, await resign(OLD, oldKid))).json().active).toBe(true);
    // The kid must name the key that signed it; an unknown key never verifies.
    expect((await userinfo(server, await resign(OLD, keyringFrom([NEW]).current.kid))).statusCode).toBe(401);
    const stranger = 'stranger-secret-that-is-at-least-32-bytes-long';
    expect((await userinfo(server, await resign(stranger, keyringFrom([stranger]).current.kid))).statusCode).toBe(401);
  });

  it('refuses an access token once it has expired', async () => {
    const issued = await issueTokens(server);
    expect((await userinfo(server, issued.access_token)).statusCode).toBe(200);
    const { iat, exp } = decodeJwt(issued.access_token) as { iat: number; exp: number };
    expect(exp - iat).toBe(TTL);
    // Refused from its exp on, however long the steps above took.
    await sleep(Math.max(0, exp * 1000 - Date.now()) + 100);
    expect((await userinfo(server, issued.access_token)).statusCode).toBe(401);
    expect((await introspect(server, issued.client, issued.access_token)).json()).toEqual({ active: false });
    // The refresh token still gets a fresh one.
    const renewed = await refresh(server, issued.client, issued.refresh_token);
    expect((await userinfo(server, renewed.json().access_token)).statusCode).toBe(200);
  });
});

describe(`POST /token gives client enumeration nothing (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  /** The grant-specific fields of a request that `client` may make: its own code, or its own refresh token. */
  async function grantFields(grantType: string, client: Credentials & { redirect_uris: string[] }): Promise<Record<string, string>> {
    if (grantType === 'refresh_token') return { grant_type: grantType, refresh_token: (await issueTokens(server, { client })).refresh_token };
    const { code, verifier } = await codeForClient(server, client);
    return { grant_type: grantType, code, code_verifier: verifier, redirect_uri: client.redirect_uris[0] };
  }

  it.each(['authorization_code', 'refresh_token'])(
    'answers an unknown client, an inactive client and a wrong secret alike, by body and by Basic (%s)',
    async (grantType) => {
      const live = await server.createClient();
      const inactive = await server.createClient();
      const liveFields = await grantFields(grantType, live);
      const inactiveFields = await grantFields(grantType, inactive);
      await server.adminCall('PATCH', `/admin/clients/${inactive.client_id}`, { active: false });

      const failures: [Record<string, string>, Credentials][] = [
        [liveFields, { client_id: 'client_unknown', client_secret: live.client_secret }],
        [inactiveFields, inactive],
        [liveFields, { client_id: live.client_id, client_secret: `${live.client_secret}x` }],
      ];
      const answers = [];
      for (const [fields, { client_id, client_secret }] of failures) {
        answers.push(await postForm(server, '/token', { ...fields, client_id, client_secret }));
        answers.push(await postForm(server, '/token', fields, { authorization: basicAuth({ client_id, client_secret }) }));
      }
      // Status, header and body, byte for byte.
      expect(new Set(answers.map((res) => JSON.stringify([res.statusCode, res.headers['www-authenticate'], res.body]))).size).toBe(1);
      expectOAuthError(answers[0], 401, 'invalid_client');
      expect(answers[0].headers['www-authenticate']).toMatch(/^Basic /);
      // None of them spent the live client's code or refresh token.
      const own = await postForm(server, '/token', { ...liveFields, client_id: live.client_id, client_secret: live.client_secret });
      expect(own.statusCode).toBe(200);
    },
  );
});

describe(`transport and cross-origin rules at the token endpoint and the sign-in page (${storeName})`, () => {
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  beforeAll(async () => {
    // As in production: TLS ends in front of the server, and ISSUER is the public https URL.
    server = await startTestServer({ ISSUER: 'https://auth.example' });
    client = await server.createClient();
  });
  afterAll(() => server.close());

  it('with an https ISSUER, sends HSTS and keeps the binding cookie off plain HTTP', async () => {
    const { res, requestId } = await startAuthorize(server, client);
    expect(res.statusCode).toBe(200);
    expect(bindingCookie(res, requestId)).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax' });
    const token = await refresh(server, client, 'aa_rt_unknown');
    for (const answer of [res, token]) expect(answer.headers['strict-transport-security']).toMatch(/max-age=[1-9]\d*/);
  });

  it('sends no CORS headers at /authorize or /token, preflights included: browsers get no cross-origin access', async () => {
    const origin = 'https://elsewhere.example';
    const { challenge } = pkce();
    const page = await server.app.inject({
      url: authorizeUrl({
        client_id: client.client_id,
        redirect_uri: client.redirect_uris[0],
        response_type: 'code',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
      headers: { origin },
    });
    expect(page.statusCode).toBe(200);
    const token = await postForm(
      server,
      '/token',
      { grant_type: 'refresh_token', refresh_token: 'aa_rt_unknown', client_id: client.client_id, client_secret: client.client_secret },
      { origin },
    );
    const preflights = await Promise.all(
      [
        ['/authorize', 'GET'],
        ['/token', 'POST'],
      ].map(([url, method]) => server.app.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': method } })),
    );
    for (const res of [page, token, ...preflights]) {
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
    for (const res of preflights) expect(res.statusCode).toBe(404);
  });
});
