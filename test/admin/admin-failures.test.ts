import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

const ATTACKER = '127.0.0.2';
const OPERATOR = '127.0.0.1';

describe(`failed admin authentications, counted per address on the whole admin listener (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    // TRUST_PROXY on the public listener must not reach the admin listener.
    server = await startTestServer({ RATE_LIMIT_ADMIN_FAILURES_PER_IP: '5', TRUST_PROXY: 'true' });
  });
  afterAll(() => server.close());

  const api = (token: string, remoteAddress: string, forwardedFor?: string) =>
    server.admin.inject({
      url: '/admin/clients',
      remoteAddress,
      headers: { authorization: `Bearer ${token}`, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    });

  it('refuses an address with 429 once its wrong tokens spent the budget, whatever X-Forwarded-For says; the operator elsewhere is served', async () => {
    for (let i = 0; i < 5; i++) expect((await api(`wrong-token-${i}-0123456789`, ATTACKER, `10.0.0.${i}`)).statusCode).toBe(401);
    const refused = await api('wrong-token-x-0123456789', ATTACKER, '10.9.9.9');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(refused.json().error).toBe('rate_limited');
    // Even the right token from the attacker's address waits: the budget is the address's.
    expect((await api(ADMIN_TOKEN, ATTACKER, '10.1.1.1')).statusCode).toBe(429);
    // The operator, from another address, is not affected.
    expect((await api(ADMIN_TOKEN, OPERATOR)).statusCode).toBe(200);
  });

  it('counts the console sign-in in the same budget', async () => {
    const form = await server.admin.inject({ url: '/console/sign-in', remoteAddress: ATTACKER });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
    const signIn = await server.admin.inject({
      method: 'POST',
      url: '/console/sign-in',
      remoteAddress: ATTACKER,
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: form.headers['set-cookie'] as string },
      payload: new URLSearchParams({ _csrf: csrf ?? '', token: ADMIN_TOKEN }).toString(),
    });
    expect(signIn.statusCode).toBe(429);
  });
});
