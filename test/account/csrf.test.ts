import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { issueTokens, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { serverWithMail, signInOwner } from '../helpers/owner.js';
import { ISSUER } from '../helpers/server.js';

type Method = 'POST' | 'PATCH' | 'DELETE' | 'PUT';
type Headers = Record<string, string>;

/** What a page of another site can make an owner's browser send, with the owner's cookie attached. */
const FOREIGN: [name: string, headers: Headers][] = [
  ['a foreign Origin', { origin: 'https://evil.example' }],
  ['Origin null without Sec-Fetch-Site', { origin: 'null' }],
  ['Origin null from another site', { origin: 'null', 'sec-fetch-site': 'cross-site' }],
  ['a cross-site fetch without Origin', { 'sec-fetch-site': 'cross-site' }],
  ['a same-site (other subdomain) fetch without Origin', { 'sec-fetch-site': 'same-site' }],
  ['a foreign Origin over a same-origin claim', { origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' }],
];

/**
 * Every state change of the owner's side, found in the OpenAPI description (so a route added later is
 * covered too), refuses each shape a cross-site request can take: a form or text/plain body (no
 * preflight), and JSON from another origin or from an opaque one. The owner's state is unchanged after.
 */
describe(`CSRF: every owner state change refuses cross-site shapes (${storeName})`, () => {
  const started = serverWithMail({ RATE_LIMIT_PASSKEY_SIGN_IN_PER_IP: '1000' });

  async function stateChanges(): Promise<[Method, string][]> {
    const doc = (await started.server.app.inject({ url: '/docs/json' })).json();
    const routes: [Method, string][] = [];
    for (const [path, operations] of Object.entries<Record<string, unknown>>(doc.paths)) {
      if (!path.startsWith('/account')) continue;
      for (const method of Object.keys(operations)) if (method !== 'get' && method !== 'head') routes.push([method.toUpperCase() as Method, path]);
    }
    return routes;
  }

  it('refuses a form, text/plain, and JSON from a foreign or opaque origin on each of them, with 403 or 415', async () => {
    const { server, smtp } = started;
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const owner = await signInOwner(server.app, smtp, email);
    const agent = { ...(await owner.call('POST', '/account/api/agents', { name: 'Kept' })).json(), email };
    const client = await server.createClient(['https://shop.example/cb']);
    const tokens = await issueTokens(server, { client, agent });
    const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const { kid } = (await owner.call('POST', `/account/api/agents/${agent.agent_id}/keys`, { jwk })).json();
    // The owner's own ids: a request that got past the guard would change something real.
    const ids: Record<string, string> = { id: agent.agent_id, client_id: client.client_id, kid, request_id: 'req_none' };
    const withIds = (path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? 'none');
    const bodies: Record<string, Record<string, unknown>> = {
      '/account/email-link': { email },
      '/account/email-link/callback': { token: 'A'.repeat(43), csrf: 'x' },
      '/account/api/me': { notify_new_website: false, approval_policy: 'always' },
      '/account/api/agents': { name: 'Planted' },
      '/account/api/agents/{id}': { active: false },
      '/account/api/agents/{id}/keys': { jwk: generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }) },
      '/account/api/approvals/{request_id}': { decision: 'approve' },
      '/account/sign-out': { everywhere: true },
    };
    const send = (method: Method, path: string, headers: Headers, payload: string) =>
      server.app.inject({ method, url: withIds(path), headers: { cookie: owner.cookie, ...headers }, payload });

    const routes = await stateChanges();
    // The owner API, the session's own forms, and the sign-in steps before any session.
    expect(routes.length).toBeGreaterThanOrEqual(19);
    for (const path of ['/account/api/revoke-all', '/account/sign-out', '/account/email-link', '/account/passkey/sign-in']) {
      expect(routes.map(([, p]) => p)).toContain(path);
    }
    for (const [method, path] of routes) {
      const body = bodies[path] ?? {};
      const json = JSON.stringify(body);
      const form = new URLSearchParams(Object.entries(body).map(([k, v]) => [k, String(v)])).toString();
      const formOnly = path === '/account/email-link/callback';
      for (const [shape, headers] of FOREIGN) {
        const res = await send(
          method,
          path,
          { ...headers, 'content-type': formOnly ? 'application/x-www-form-urlencoded' : 'application/json' },
          formOnly ? form : json,
        );
        expect(res.statusCode, `${method} ${path} with ${shape}: ${res.body.slice(0, 200)}`).toBe(403);
        if (!String(res.headers['content-type']).startsWith('text/html')) expect(res.json().error).toBe('forbidden');
      }
      // A body no preflight guards, from this very origin: only the portal's own forms (with their
      // token) and asking for a sign-in link take forms; nothing takes text/plain.
      // The owner API answers 415 to anything but JSON; the rest refuse it one way or another.
      const refusals = path.startsWith('/account/api/') ? [415] : [400, 403, 415];
      const plain = await send(method, path, { origin: ISSUER, 'content-type': 'text/plain' }, json);
      expect(refusals, `${method} ${path} as text/plain: ${plain.body.slice(0, 200)}`).toContain(plain.statusCode);
      if (path !== '/account/email-link') {
        const posted = await send(method, path, { origin: ISSUER, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' }, form);
        expect(refusals, `${method} ${path} as a form without the page's token: ${posted.body.slice(0, 200)}`).toContain(posted.statusCode);
      }
    }

    // Nothing changed: the session, the settings, the agent, its key and its grant all stand.
    const me = await owner.call('GET', '/account/api/me');
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ approval_policy: 'never', notify_new_website: true, passkeys: [] });
    const agents = (await owner.call('GET', '/account/api/agents')).json().agents;
    expect(agents).toHaveLength(1);
    expect(agents[0]).toMatchObject({ agent_id: agent.agent_id, active: true, websites: [expect.objectContaining({ client_id: client.client_id })] });
    expect((await owner.call('GET', `/account/api/agents/${agent.agent_id}/keys`)).json().keys).toHaveLength(1);
    expect((await userinfo(server, tokens.access_token)).statusCode).toBe(200);
  });

  it('takes the same calls from a script (no Origin) and from its own pages (Origin null, Sec-Fetch-Site same-origin)', async () => {
    const { server, smtp } = started;
    const owner = await signInOwner(server.app, smtp, `owner-${Math.random().toString(36).slice(2)}@example.com`);
    for (const headers of [{}, { origin: 'null', 'sec-fetch-site': 'same-origin' }, { origin: ISSUER, 'sec-fetch-site': 'same-origin' }]) {
      const res = await server.app.inject({
        method: 'PATCH',
        url: '/account/api/me',
        headers: { cookie: owner.cookie, 'content-type': 'application/json', ...headers },
        payload: JSON.stringify({ notify_new_website: false }),
      });
      expect(res.statusCode, JSON.stringify(headers)).toBe(200);
    }
  });
});
