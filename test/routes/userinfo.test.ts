import { createHmac } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyringFrom } from '../../src/crypto/keyring.js';
import { issueTokens, postForm, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SECRET = 'test-jwt-secret-that-is-at-least-32-bytes-long';

describe(`GET /userinfo (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  // A bearer token that failed names the error; no bearer token at all names none (RFC 6750 §3.1).
  function expectRefused(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, challenge = 'Bearer error="invalid_token"') {
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_request', error_description: 'missing or invalid access token' });
    expect(res.headers['www-authenticate']).toBe(challenge);
    expect(res.headers['cache-control']).toBe('no-store');
  }

  it.each([
    { scope: 'email', withEmail: true },
    { scope: 'openid', withEmail: true },
    { scope: 'profile', withEmail: true },
    { scope: 'openid email profile', withEmail: true },
    { scope: '', withEmail: false },
  ])('scope "$scope": email returned is $withEmail', async ({ scope, withEmail }) => {
    const { agent, access_token } = await issueTokens(server, { scope });
    const res = await userinfo(server, access_token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual(withEmail ? { sub: agent.agent_id, email: agent.email } : { sub: agent.agent_id });
  });

  it('reads the email from the user record at call time', async () => {
    const { agent, access_token } = await issueTokens(server, { scope: 'email' });
    await server.services.db.query(`UPDATE users SET email = 'renamed@example.com' WHERE id = (SELECT user_id FROM agents WHERE id = $1)`, [
      agent.agent_id,
    ]);
    expect((await userinfo(server, access_token)).json()).toEqual({ sub: agent.agent_id, email: 'renamed@example.com' });
  });

  it('GET takes the token only in the Authorization header', async () => {
    const { access_token } = await issueTokens(server);
    expectRefused(await server.app.inject({ url: '/userinfo' }), 'Bearer');
    expectRefused(await server.app.inject({ url: `/userinfo?access_token=${access_token}` }), 'Bearer');
    expectRefused(await server.app.inject({ url: '/userinfo', headers: { authorization: access_token } }), 'Bearer');
    expectRefused(await server.app.inject({ url: '/userinfo', headers: { authorization: `Basic ${access_token}` } }), 'Bearer');
    expectRefused(await server.app.inject({ url: '/userinfo', headers: { authorization: 'Bearer not a token' } }));
    expect((await server.app.inject({ url: '/userinfo', headers: { authorization: `bearer ${access_token}` } })).statusCode).toBe(200);
  });

  it('POST answers as GET, with the token in the header or in a form body, never both (OpenID Connect Core §5.3.1, RFC 6750 §2.2)', async () => {
    const { agent, access_token } = await issueTokens(server, { scope: 'openid' });
    const expected = { sub: agent.agent_id, email: agent.email };
    const header = await server.app.inject({ method: 'POST', url: '/userinfo', headers: { authorization: `Bearer ${access_token}` } });
    expect(header.statusCode).toBe(200);
    expect(header.headers['cache-control']).toBe('no-store');
    expect(header.json()).toEqual(expected);
    const form = await postForm(server, '/userinfo', { access_token });
    expect(form.statusCode).toBe(200);
    expect(form.json()).toEqual(expected);

    const both = await postForm(server, '/userinfo', { access_token }, { authorization: `Bearer ${access_token}` });
    expect(both.statusCode).toBe(400);
    expect(both.json()).toMatchObject({ error: 'invalid_request' });
    expectRefused(await server.app.inject({ method: 'POST', url: '/userinfo' }), 'Bearer');
    expectRefused(await postForm(server, '/userinfo', { access_token: 'garbage' }));
    expectRefused(await server.app.inject({ method: 'POST', url: '/userinfo', headers: { authorization: 'Bearer garbage' } }));
  });

  it('refuses garbage, forged, altered and wrongly typed tokens', async () => {
    const { access_token } = await issueTokens(server);
    const claims = decodeJwt(access_token);
    const kid = keyringFrom([SECRET]).current.kid;
    const sign = (header: Record<string, unknown>, payload: Record<string, unknown> = claims, secret = SECRET) =>
      new SignJWT(payload).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid, ...header } as never).sign(new TextEncoder().encode(secret));
    // What jose will not sign: a header with an extension the verifier must understand.
    const rawSign = (header: Record<string, unknown>, payload: Record<string, unknown>) => {
      const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
      return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
    };
    const [head, body] = access_token.split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid })).toString('base64url')}.${body}.`;
    const tampered = `${head}.${Buffer.from(JSON.stringify({ ...claims, scope: 'email', sub: 'agent_other' })).toString('base64url')}.${access_token.split('.')[2]}`;
    const signature = access_token.split('.')[2];
    // The last of 43 base64url characters carries 4 bits of the HMAC: its neighbour decodes the same.
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.indexOf(signature.at(-1)!);
    const respelt = `${head}.${body}.${signature.slice(0, -1)}${'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[last ^ 1]}`;
    const bad = [
      'garbage',
      `${access_token}=`,
      respelt,
      `${access_token}.x`,
      await sign({ alg: 'HS384' }),
      rawSign({ alg: 'HS256', typ: 'at+jwt', kid, crit: ['x-ext'], 'x-ext': true }, claims),
      'a.b.c',
      'x'.repeat(5000),
      none,
      tampered,
      await sign({ typ: 'JWT' }),
      await sign({}, { ...claims, iss: 'https://evil.example' }),
      await sign({}, { ...claims, exp: Math.floor(Date.now() / 1000) - 5 }),
      await sign({}, { ...claims, jti: 'grant_unknown.abc' }),
      await sign({}, { ...claims, jti: 'no-grant-in-it' }),
      await sign({}, { ...claims, sub: 'agent_someone_else' }),
      await sign({ kid: 'nope' }),
      await sign({}, claims, 'another-secret-that-is-at-least-32-bytes-long'),
    ];
    expect((await userinfo(server, await sign({}))).statusCode).toBe(200);
    for (const token of bad) expectRefused(await userinfo(server, token));
  });

  it('refuses the tokens of a deactivated or deleted agent and of a deactivated client', async () => {
    const a = await issueTokens(server);
    await server.adminCall('PATCH', `/admin/agents/${a.agent.agent_id}`, { active: false });
    expectRefused(await userinfo(server, a.access_token));
    // Deactivation ended the agent's grants (the websites were told so): activating it again restores none.
    await server.adminCall('PATCH', `/admin/agents/${a.agent.agent_id}`, { active: true });
    expectRefused(await userinfo(server, a.access_token));

    const b = await issueTokens(server);
    await server.adminCall('PATCH', `/admin/clients/${b.client.client_id}`, { active: false });
    expectRefused(await userinfo(server, b.access_token));

    const c = await issueTokens(server);
    expect((await server.adminCall('DELETE', `/admin/agents/${c.agent.agent_id}`)).statusCode).toBe(204);
    expectRefused(await userinfo(server, c.access_token));
  });
});
