import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type Credentials, introspect, issueTokens, postForm, refresh, revoke, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

describe(`POST /introspect and POST /revoke (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  describe('introspect', () => {
    it('describes an active access token with the fields docs/protocol.md lists', async () => {
      const { client, agent, access_token } = await issueTokens(server, { scope: 'openid email' });
      const res = await introspect(server, client, access_token);
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      const claims = decodeJwt(access_token);
      expect(res.json()).toEqual({
        active: true,
        sub: agent.agent_id,
        client_id: client.client_id,
        scope: 'openid email',
        exp: claims.exp,
        iat: claims.iat,
        iss: ISSUER,
        aud: client.client_id,
        jti: claims.jti,
        token_type: 'access_token',
        model: 'test-model-1',
      });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      // Asked again, the same answer (serialised once per token, src/routes/introspect.ts).
      expect((await introspect(server, client, access_token)).body).toBe(res.body);
    });

    it('describes an active refresh token (no jti; iat and exp of the refresh token itself)', async () => {
      const { client, agent, refresh_token } = await issueTokens(server, { scope: 'email' });
      const body = (await introspect(server, client, refresh_token)).json();
      expect(body).toEqual({
        active: true,
        sub: agent.agent_id,
        client_id: client.client_id,
        scope: 'email',
        exp: expect.any(Number),
        iat: expect.any(Number),
        iss: ISSUER,
        aud: client.client_id,
        token_type: 'refresh_token',
        model: 'test-model-1',
      });
      expect(body.exp - body.iat).toBeGreaterThanOrEqual(2592000 - 2);
      expect(body.exp - body.iat).toBeLessThanOrEqual(2592000 + 2);
    });

    it('reports a spent refresh token as inactive', async () => {
      const { client, refresh_token } = await issueTokens(server);
      expect((await refresh(server, client, refresh_token)).statusCode).toBe(200);
      const inactive = await introspect(server, client, refresh_token);
      expect(inactive.json()).toEqual({ active: false });
      expect(inactive.headers['content-type']).toBe('application/json; charset=utf-8');
    });

    it('answers {active:false} for unknown tokens and for tokens of another client', async () => {
      const { access_token, refresh_token } = await issueTokens(server);
      const other = await server.createClient();
      for (const token of ['garbage', 'aa_rt_unknown', 'a.b.c', access_token, refresh_token]) {
        const res = await introspect(server, other, token);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ active: false });
      }
    });

    it('ignores token_type_hint, right or wrong', async () => {
      const { client, access_token, refresh_token } = await issueTokens(server);
      const call = (token: string, hint: string) =>
        postForm(server, '/introspect', { token, token_type_hint: hint, client_id: client.client_id, client_secret: client.client_secret });
      expect((await call(access_token, 'refresh_token')).json().token_type).toBe('access_token');
      expect((await call(refresh_token, 'access_token')).json().token_type).toBe('refresh_token');
      expect((await call(access_token, 'id_token')).json().active).toBe(true);
    });

    it('needs client authentication, by body or Basic', async () => {
      const { client, access_token } = await issueTokens(server);
      const noAuth = await postForm(server, '/introspect', { token: access_token });
      expect(noAuth.statusCode).toBe(401);
      expect(noAuth.json().error).toBe('invalid_client');
      const wrong = await introspect(server, { ...client, client_secret: 'wrong' }, access_token);
      expect(wrong.statusCode).toBe(401);
      expect(wrong.body).toBe(noAuth.body);
      const basic = await postForm(server, '/introspect', { token: access_token }, { authorization: basicAuth(client) });
      expect(basic.json().active).toBe(true);
    });
  });

  describe('revoke', () => {
    it('revokes one access token: userinfo 401, introspect inactive, the rest of the grant lives on', async () => {
      const { client, access_token, refresh_token } = await issueTokens(server);
      const res = await revoke(server, client, access_token);
      expect(res.statusCode).toBe(200);
      // RFC 7009 §2.2 leaves the body open; an empty JSON object parses in every client library.
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toBe('{}');
      expect(res.headers['cache-control']).toBe('no-store');
      expect((await userinfo(server, access_token)).statusCode).toBe(401);
      expect((await introspect(server, client, access_token)).json()).toEqual({ active: false });
      // Revoking it twice is fine too.
      expect((await revoke(server, client, access_token)).statusCode).toBe(200);
      const renewed = await refresh(server, client, refresh_token);
      expect(renewed.statusCode).toBe(200);
      expect((await userinfo(server, renewed.json().access_token)).statusCode).toBe(200);
    });

    it('revokes a refresh token with its family: refresh fails and its access tokens go inactive', async () => {
      const first = await issueTokens(server);
      const second = (await refresh(server, first.client, first.refresh_token)).json();
      const res = await revoke(server, first.client, second.refresh_token);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('{}');
      expect((await refresh(server, first.client, second.refresh_token)).json().error).toBe('invalid_grant');
      for (const token of [first.access_token, second.access_token, second.refresh_token]) {
        expect((await introspect(server, first.client, token)).json()).toEqual({ active: false });
      }
      expect((await userinfo(server, second.access_token)).statusCode).toBe(401);
    });

    it('answers 200 for unknown tokens and unsupported hints', async () => {
      const { client, access_token } = await issueTokens(server);
      for (const token of ['garbage', 'aa_rt_unknown', 'a.b.c']) {
        const res = await revoke(server, client, token);
        expect(res.statusCode).toBe(200);
        expect(res.body).toBe('{}');
      }
      expect((await revoke(server, client, access_token, { token_type_hint: 'something_else' })).statusCode).toBe(200);
      expect((await userinfo(server, access_token)).statusCode).toBe(401);
    });

    it("answers 200 to another client but leaves that client's tokens working", async () => {
      const { client, access_token, refresh_token } = await issueTokens(server);
      const other = await server.createClient();
      expect((await revoke(server, other, access_token)).statusCode).toBe(200);
      expect((await revoke(server, other, refresh_token)).statusCode).toBe(200);
      expect((await userinfo(server, access_token)).statusCode).toBe(200);
      expect((await introspect(server, client, refresh_token)).json().active).toBe(true);
      expect((await refresh(server, client, refresh_token)).statusCode).toBe(200);
    });

    it('needs client authentication and a token', async () => {
      const { client, access_token } = await issueTokens(server);
      const noAuth = await postForm(server, '/revoke', { token: access_token });
      expect(noAuth.statusCode).toBe(401);
      expect(noAuth.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
      const missing = await postForm(server, '/revoke', { client_id: client.client_id, client_secret: client.client_secret });
      expect(missing.statusCode).toBe(400);
      expect(missing.json().error).toBe('invalid_request');
      expect((await userinfo(server, access_token)).statusCode).toBe(200);
    });
  });

  it.each(['/introspect', '/revoke'])(
    '%s answers an unknown client, an inactive client and a wrong secret alike, by body and by Basic, whatever the token',
    async (url) => {
      const live = await issueTokens(server);
      const inactive = await issueTokens(server);
      await server.adminCall('PATCH', `/admin/clients/${inactive.client.client_id}`, { active: false });
      const answers = [];
      // Access token, refresh token and garbage each take their own path to the client's row (src/routes/introspect.ts).
      for (const kind of ['access_token', 'refresh_token', 'garbage'] as const) {
        const tokenOf = (issued: typeof live) => (kind === 'garbage' ? 'garbage' : issued[kind]);
        const failures: [Credentials, string][] = [
          [{ client_id: 'client_unknown', client_secret: live.client.client_secret }, tokenOf(live)],
          [inactive.client, tokenOf(inactive)],
          [{ client_id: live.client.client_id, client_secret: `${live.client.client_secret}x` }, tokenOf(live)],
        ];
        for (const [{ client_id, client_secret }, token] of failures) {
          answers.push(await postForm(server, url, { token, client_id, client_secret }));
          answers.push(await postForm(server, url, { token }, { authorization: basicAuth({ client_id, client_secret }) }));
        }
      }
      // Status, header and body, byte for byte.
      expect(new Set(answers.map((res) => JSON.stringify([res.statusCode, res.headers['www-authenticate'], res.body]))).size).toBe(1);
      expect(answers[0].statusCode).toBe(401);
      expect(answers[0].headers['www-authenticate']).toMatch(/^Basic /);
      expect(answers[0].json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
      // Nothing was revoked: the live client's tokens still work.
      expect((await introspect(server, live.client, live.access_token)).json().active).toBe(true);
      expect((await introspect(server, live.client, live.refresh_token)).json().active).toBe(true);
    },
  );

  it('answers bad bodies on both endpoints with a 4xx in the OAuth error format, never a 5xx', async () => {
    const client = await server.createClient();
    const creds = { client_id: client.client_id, client_secret: client.client_secret };
    for (const url of ['/introspect', '/revoke']) {
      const json = (payload: unknown) =>
        server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
      const responses = [
        await json({ token: 42, ...creds }),
        await json({ token: ['a'], ...creds }),
        await json({ token: { nested: true }, ...creds }),
        await json({ token: 'x'.repeat(10_000), ...creds }),
        await json({ token: 'x', token_type_hint: 7, ...creds }),
        await json({ token: 'x', client_id: null, client_secret: creds.client_secret }),
        await json(null),
        await json([]),
        await postForm(server, url, { token: ['a', 'b'], ...creds }),
        await postForm(server, url, { ...creds }),
        await server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '{' }),
        await server.app.inject({ method: 'POST', url }),
      ];
      for (const res of responses) {
        expect(res.statusCode, `${url} ${res.body}`).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, `${url} ${res.body}`).toBeLessThan(500);
        expect(res.json()).toEqual({ error: expect.any(String), error_description: expect.any(String) });
      }
    }
  });
});
