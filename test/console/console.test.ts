import { createHmac, generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.js';
import { exchangeCode, issueTokens } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { signInToCode } from '../helpers/flow.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

type Injected = Awaited<ReturnType<TestServer['admin']['inject']>>;

const cookieHeader = (res: Injected) =>
  res.cookies
    .filter((c) => c.value)
    .map((c) => `${c.name}=${c.value}`)
    .join('; ');
const formToken = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1];

/** The sign-in form, then the post: what a browser does. */
async function signIn(server: TestServer, token = ADMIN_TOKEN, remoteAddress = '127.0.0.1') {
  const form = await server.admin.inject({ url: '/console/sign-in', remoteAddress });
  const res = await server.admin.inject({
    method: 'POST',
    url: '/console/sign-in',
    remoteAddress,
    headers: { cookie: cookieHeader(form) },
    payload: { token, _csrf: formToken(form.body)! },
  });
  const session = res.cookies.find((c) => c.name === 'agent_auth_console');
  return { res, session, cookie: session ? `agent_auth_console=${session.value}` : '' };
}

/** A signed-in operator: GET a page and POST its forms with the page's own token. */
async function operator(server: TestServer) {
  const { cookie } = await signIn(server);
  const token = formToken((await server.admin.inject({ url: '/console', headers: { cookie } })).body)!;
  return {
    cookie,
    token,
    get: (url: string, extraCookie = '') => server.admin.inject({ url, headers: { cookie: [cookie, extraCookie].filter(Boolean).join('; ') } }),
    /** csrf null: the form without its token. */
    post: (url: string, fields: Record<string, string>, csrf: string | null = token) =>
      server.admin.inject({ method: 'POST', url, headers: { cookie }, payload: csrf === null ? fields : { ...fields, _csrf: csrf } }),
  };
}

describe(`the operators' console (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_ADMIN_FAILURES_PER_IP: '10' });
  });
  afterAll(() => server?.close());

  it('exists on the admin listener only', async () => {
    for (const url of ['/console', '/console/sign-in', '/console/websites']) {
      expect((await server.app.inject({ url })).statusCode).toBe(404);
    }
    const res = await server.admin.inject({ url: '/console' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in');
  });

  it('serves pages with a strict CSP, no framing, no referrer and no-store', async () => {
    const res = await server.admin.inject({ url: '/console/sign-in' });
    expect(res.statusCode).toBe(200);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'self' 'nonce-[0-9a-f]+';/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    // No inline script at all: only the console's own file.
    expect(res.body.match(/<script[^>]*>/g)).toEqual([expect.stringContaining('src="/console/assets/pages.js"')]);
    expect(res.body).toContain('></script>');
    expect(res.body).not.toMatch(/<script[^>]*>[^<]/);
  });

  it('signs in with the admin token: an HttpOnly, SameSite=Strict session cookie on /console that is not the token', async () => {
    const { res, session } = await signIn(server);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console', maxAge: 8 * 3600 });
    expect(session!.value).not.toContain(ADMIN_TOKEN);
    expect(session!.value).not.toContain(sha256(ADMIN_TOKEN));
    const home = await server.admin.inject({ url: '/console', headers: { cookie: `agent_auth_console=${session!.value}` } });
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('<h1>Overview</h1>');
  });

  it('refuses a wrong token with a message and no session', async () => {
    const { res, session } = await signIn(server, 'not-the-admin-token-at-all', '10.0.0.1');
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain('That is not the admin token.');
    expect(session).toBeUndefined();
  });

  it('refuses a sign-in post without the form token of this browser', async () => {
    const res = await server.admin.inject({ method: 'POST', url: '/console/sign-in', payload: { token: ADMIN_TOKEN, _csrf: 'x' } });
    expect(res.statusCode).toBe(403);
    expect(res.cookies.find((c) => c.name === 'agent_auth_console')).toBeUndefined();
  });

  it('stops guessing after ten failures from one address, without locking out other addresses', async () => {
    for (let i = 0; i < 10; i++) expect((await signIn(server, `wrong-token-${i}`, '10.0.0.9')).res.statusCode).toBe(401);
    const blocked = await signIn(server, ADMIN_TOKEN, '10.0.0.9');
    expect(blocked.res.statusCode).toBe(429);
    expect(blocked.session).toBeUndefined();
    expect(blocked.res.headers['retry-after']).toBeDefined();
    expect((await signIn(server, ADMIN_TOKEN, '10.0.0.10')).res.statusCode).toBe(303);
  });

  it('refuses a forged, expired or foreign session cookie', async () => {
    // Keyed with the admin token's digest, as every instance knows it (src/console/session.ts).
    const forge = (key: string, expires: number) => {
      const body = `${expires}.AAAAAAAAAAAAAAAAAAAAAA`;
      const derived = createHmac('sha256', key).update('agent-auth console session').digest();
      return `${body}.${createHmac('sha256', derived).update(body).digest('base64url')}`;
    };
    const now = Math.floor(Date.now() / 1000);
    for (const value of [forge(sha256('another-admin-token-0123456789'), now + 3600), forge(sha256(ADMIN_TOKEN), now - 1), 'garbage', ADMIN_TOKEN]) {
      const res = await server.admin.inject({ url: '/console', headers: { cookie: `agent_auth_console=${value}` } });
      expect(res.statusCode, value).toBe(303);
      expect(res.headers.location).toBe('/console/sign-in');
    }
    // The forger's format is right: with the real token, it is a session.
    const genuine = await server.admin.inject({ url: '/console', headers: { cookie: `agent_auth_console=${forge(sha256(ADMIN_TOKEN), now + 60)}` } });
    expect(genuine.statusCode).toBe(200);
  });

  it('refuses every form post without the session’s form token (CSRF), changing nothing', async () => {
    const op = await operator(server);
    const other = await operator(server);
    const before = (await server.adminCall('GET', '/admin/clients')).json.clients.length;
    for (const csrf of [null, '', 'forged', other.token]) {
      const res = await op.post('/console/websites', { name: 'Evil', redirect_uris: 'https://evil.example/cb' }, csrf);
      expect(res.statusCode, String(csrf)).toBe(403);
      expect(res.body).toContain('did not come from this console');
    }
    expect((await server.adminCall('GET', '/admin/clients')).json.clients.length).toBe(before);
    const client = await server.createClient();
    expect((await op.post(`/console/websites/${client.client_id}/revoke-grants`, {}, null)).statusCode).toBe(403);
    expect((await op.post(`/console/websites/${client.client_id}/active`, { active: 'false' }, 'forged')).statusCode).toBe(403);
    expect((await server.adminCall('GET', `/admin/clients/${client.client_id}`)).json.active).toBe(true);
    // Signing out needs the token too, so another site cannot sign the operator out.
    expect((await op.post('/console/sign-out', {}, null)).statusCode).toBe(403);
  });

  it('registers a website through the admin API’s schema and shows its secret once', async () => {
    const op = await operator(server);
    const res = await op.post('/console/websites', {
      name: 'Console shop',
      redirect_uris: 'https://shop.example/cb\r\n\r\nhttp://localhost:8080/cb',
    });
    expect(res.statusCode).toBe(303);
    const clientId = /^\/console\/websites\/(client_[\w-]+)$/.exec(String(res.headers.location))![1];
    const stored = await server.services.store.clients.getWithSecret(clientId);
    expect(stored).toMatchObject({ name: 'Console shop', redirect_uris: ['https://shop.example/cb', 'http://localhost:8080/cb'] });

    const flash = cookieHeader(res)
      .split('; ')
      .find((c) => c.startsWith('agent_auth_console_flash='))!;
    expect(flash).toBeDefined();
    expect(flash).not.toContain('aa_cs_');
    const shown = await op.get(res.headers.location as string, flash);
    const secret = /<code id="new-secret">([^<]+)<\/code>/.exec(shown.body)![1];
    expect(sha256(secret)).toBe(stored!.secret_hash);
    // The page that showed it cleared it: the next visit has nothing to show.
    expect(shown.cookies.find((c) => c.name === 'agent_auth_console_flash')?.value).toBe('');
    expect((await op.get(res.headers.location as string)).body).not.toContain(secret);
  });

  it('sends a registration the schema refuses back with the reason and the fields as typed, creating nothing', async () => {
    const op = await operator(server);
    const before = (await server.adminCall('GET', '/admin/clients')).json.clients.length;
    const res = await op.post('/console/websites', { name: 'Plain <shop>', redirect_uris: 'http://plain.example/cb\nhttps://ok.example/cb' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toMatch(/class="problem" role="alert">redirect uris #1: [^<]*https/);
    // Nothing to type again: the name and both lines are in the form, escaped.
    expect(res.body).toContain('<input id="name" name="name" required maxlength="200" value="Plain &lt;shop&gt;">');
    expect(res.body).toContain('>http://plain.example/cb\nhttps://ok.example/cb</textarea>');
    expect((await server.adminCall('GET', '/admin/clients')).json.clients.length).toBe(before);

    const agents = (await server.adminCall('GET', '/admin/agents')).json.agents.length;
    const refused = await op.post('/console/agents', { email: 'not an email', name: 'Kept name' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(/class="problem" role="alert">email: /);
    expect(refused.body).toContain('value="not an email"');
    expect(refused.body).toContain('value="Kept name"');
    expect((await server.adminCall('GET', '/admin/agents')).json.agents.length).toBe(agents);
    // The pages without a refusal start empty.
    expect((await op.get('/console/websites')).body).toContain(
      '<textarea id="redirect_uris" name="redirect_uris" required aria-describedby="redirect-hint"></textarea>',
    );
  });

  /** Posts a form as `op`, then shows the page it leads to with its flash, as a browser would. */
  const actingAs = (op: Awaited<ReturnType<typeof operator>>) => async (url: string, fields: Record<string, string>) => {
    const res = await op.post(url, fields);
    expect(res.statusCode).toBe(303);
    return (await op.get(res.headers.location as string, cookieHeader(res))).body;
  };

  it("adds and deletes an agent's keys and makes it key-only, through the admin API's rules", async () => {
    const op = await operator(server);
    const agent = await server.createAgent();
    const page = `/console/agents/${agent.agent_id}`;
    const act = actingAs(op);
    expect((await op.get(page)).body).toContain('No keys: the agent signs in with its secret.');

    const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const kid = await calculateJwkThumbprint(jwk as JWK, 'sha256');
    let body = await act(`${page}/keys`, { jwk: JSON.stringify(jwk) });
    expect(body).toContain(`Key ${kid} added`);
    expect(body).toContain(`<tr data-kid="${kid}">`);
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`)).json.keys).toHaveLength(1);

    // Refusals come back on the page, nothing added.
    const privateJwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
    expect(await act(`${page}/keys`, { jwk: JSON.stringify(privateJwk) })).toMatch(/class="problem" role="alert">jwk holds a private key/);
    expect(await act(`${page}/keys`, { jwk: 'not json' })).toMatch(/class="problem" role="alert">public key: paste a JWK/);
    expect(await act(`${page}/keys`, { jwk: JSON.stringify(jwk) })).toMatch(/class="problem" role="alert">the agent already has a key/);
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`)).json.keys).toHaveLength(1);

    body = await act(`${page}/secret-enabled`, { secret_enabled: 'false' });
    expect(body).toContain('Key-only: the agent’s secret is refused from now on.');
    expect(body).toContain('<span class="badge on">Key-only</span>');
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}`)).json.secret_enabled).toBe(false);
    expect(await act(`${page}/secret-enabled`, { secret_enabled: 'true' })).toContain('Secret allowed again');

    body = await act(`${page}/keys/${kid}/delete`, {});
    expect(body).toContain(`Key ${kid} deleted`);
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`)).json.keys).toEqual([]);
    expect(await act(`${page}/keys/${kid}/delete`, {})).toMatch(/class="problem" role="alert">the agent [\w-]+ has no key/);
    // Without the form token, nothing changes.
    expect((await op.post(`${page}/keys`, { jwk: JSON.stringify(jwk) }, null)).statusCode).toBe(403);
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`)).json.keys).toEqual([]);
    const keyRows = (await server.adminCall('GET', `/admin/audit?agent_id=${agent.agent_id}`)).json.events.filter((e: { event: string }) =>
      e.event.startsWith('agent_key_'),
    );
    expect(keyRows.map((e: { event: string; actor: string }) => [e.event, e.actor])).toEqual([
      ['agent_key_deleted', 'admin'],
      ['agent_key_added', 'admin'],
    ]);
  });

  it("adds and deletes an agent's request-signing keys, which the directory then lists and drops", async () => {
    const op = await operator(server);
    const agent = await server.createAgent();
    const page = `/console/agents/${agent.agent_id}`;
    const act = actingAs(op);
    const listed = async () =>
      (await server.app.inject({ method: 'GET', url: '/.well-known/http-message-signatures-directory' }))
        .json()
        .keys.map((k: { kid: string }) => k.kid);
    expect((await op.get(page)).body).toContain('No request-signing keys');

    const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const kid = await calculateJwkThumbprint(jwk as JWK, 'sha256');
    const body = await act(`${page}/signing-keys`, { jwk: JSON.stringify(jwk) });
    expect(body).toContain(`Key ${kid} added: the directory lists it now`);
    expect(body).toMatch(new RegExp(`<table id="signing-keys-table">[\\s\\S]*<tr data-kid="${kid}">`));
    expect(await listed()).toContain(kid);
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    expect(await act(`${page}/signing-keys`, { jwk: JSON.stringify(p256) })).toMatch(/class="problem" role="alert">jwk must be an Ed25519/);

    expect(await act(`${page}/signing-keys/${kid}/delete`, {})).toContain(`Key ${kid} deleted: websites refuse`);
    expect(await listed()).not.toContain(kid);
    expect((await op.post(`${page}/signing-keys`, { jwk: JSON.stringify(jwk) }, null)).statusCode).toBe(403);
    expect(await listed()).not.toContain(kid);
  });

  it('lists every user on the Users page, each leading to their agents and sign-ins', async () => {
    const op = await operator(server);
    const agent = await server.createAgent('listed-user@example.com');
    await server.createAgent('Listed-User@example.com');
    const page = await op.get('/console/users');
    expect(page.statusCode).toBe(200);
    const row = new RegExp(
      '<a href="/console/users\\?email=listed-user%40example.com">listed-user@example.com</a></td>\\s*<td data-label="Agents">2</td>',
    );
    expect(page.body).toMatch(row);
    const emails = [...page.body.matchAll(/<td data-label="Email"><a [^>]+>([^<]+)</g)].map((m) => m[1]);
    expect(emails).toEqual([...emails].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())));
    const user = await op.get('/console/users?email=listed-user%40example.com');
    expect(user.body).toContain(agent.agent_id);
    expect(user.body).not.toContain('id="users-table"');
  });

  it('tells two websites of one name apart by the host they send the code to, and names websites in the audit log', async () => {
    const op = await operator(server);
    const twins = [];
    for (const host of ['twin-a.example', 'twin-b.example']) {
      twins.push((await server.adminCall('POST', '/admin/clients', { name: 'Twin shop', redirect_uris: [`https://${host}/cb`] })).json);
    }
    const agent = await server.createAgent();
    for (const client of twins) {
      const { code, verifier } = await signInToCode(server, { client, agent });
      expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
    }
    const list = await op.get('/console/websites?q=Twin');
    for (const [i, host] of ['twin-a.example', 'twin-b.example'].entries()) {
      expect(list.body).toContain(`<a href="/console/websites/${twins[i].client_id}">Twin shop</a><br><span class="muted">at ${host}</span>`);
    }
    const grants = (await op.get(`/console/agents/${agent.agent_id}`)).body;
    for (const [i, host] of ['twin-a.example', 'twin-b.example'].entries()) {
      expect(grants).toContain(`<a href="/console/websites/${twins[i].client_id}">Twin shop</a><br><span class="muted">${host}</span>`);
    }
    const audit = (await op.get(`/console/audit?agent_id=${agent.agent_id}&event=token_issued`)).body;
    expect(
      audit.match(
        /data-label="Website"><a href="\/console\/websites\/client_[\w-]+">Twin shop<\/a><br><span class="muted">twin-[ab]\.example<\/span>/g,
      ),
    ).toHaveLength(2);
    // Names, not ids: an id appears only in the link's address.
    for (const client of twins) expect(audit).not.toContain(`>${client.client_id}<`);
  });

  it('rotates a secret with its grants by default (a checkbox says so), and only the secret when unchecked; the notice says which', async () => {
    const op = await operator(server);
    const cases = [
      {
        page: 'agents',
        id: (t: Awaited<ReturnType<typeof issueTokens>>) => t.agent.agent_id,
        label: 'Also sign this agent out of every website now',
      },
      {
        page: 'websites',
        id: (t: Awaited<ReturnType<typeof issueTokens>>) => t.client.client_id,
        label: 'Also sign every agent out of this website now',
      },
    ];
    for (const { page, id, label } of cases) {
      for (const revoke of [true, false]) {
        const tokens = await issueTokens(server);
        const url = `/console/${page}/${id(tokens)}`;
        const form = (await op.get(url)).body;
        expect(form).toContain(`<label class="check"><input type="checkbox" name="revoke_grants" value="true" checked> ${label}</label>`);
        // A browser sends a checkbox only when it is checked.
        const res = await op.post(`${url}/secret`, revoke ? { revoke_grants: 'true' } : {});
        expect(res.statusCode).toBe(303);
        const shown = (await op.get(res.headers.location as string, cookieHeader(res))).body;
        expect(shown).toContain(revoke ? 'New secret issued. The old secret, every token' : 'New secret issued. Only the old secret no longer works');
        const grants = (await server.adminCall('GET', `/admin/agents/${tokens.agent.agent_id}/grants`)).json.grants;
        expect(grants.map((g: { active: boolean }) => g.active)).toEqual([!revoke]);
      }
    }
  });

  it('groups an agent’s grants by website: one row with the count, the newest sign-in and each grant inside', async () => {
    const op = await operator(server);
    const { client, agent, code, verifier } = await signInToCode(server);
    expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) {
      const again = await signInToCode(server, { client, agent, model: `model-${i}` });
      expect((await exchangeCode(server, client, again.code, again.verifier)).statusCode).toBe(200);
    }
    const other = await signInToCode(server, { agent });
    expect((await exchangeCode(server, other.client, other.code, other.verifier)).statusCode).toBe(200);
    const grants = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants as {
      created_at: string;
      client_id: string;
    }[];
    const newest = grants
      .filter((g) => g.client_id === client.client_id)
      .map((g) => g.created_at)
      .sort()
      .at(-1);

    const body = (await op.get(`/console/agents/${agent.agent_id}`)).body;
    const rows = body.match(/<tr data-agent="[^"]+" data-client="[^"]+">[\s\S]*?<\/tr>/g)!;
    expect(rows).toHaveLength(2);
    const row = rows.find((r) => r.includes(`data-client="${client.client_id}"`))!;
    expect(row).toMatch(/class="grant-count">3</);
    expect(row).toContain('Show the 3 sign-ins');
    for (const model of ['test-model-1', 'model-0', 'model-1']) expect(row).toContain(model);
    expect(row.match(/data-grant="/g)).toHaveLength(3);
    expect(/data-label="Newest sign-in"><time datetime="([^"]+)"/.exec(row)![1]).toBe(newest);
  });

  it('acts through the admin API’s functions: deactivate, rotate, kill switch, per-grant revoke, user revoke', async () => {
    const op = await operator(server);
    const { client, agent, code, verifier } = await signInToCode(server);
    expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(200);
    const [grant] = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants;

    // The website lists the agent signed in now, with its model; the home page its last sign-in.
    expect((await op.get(`/console/websites/${client.client_id}`)).body).toContain('test-model-1');
    expect((await op.get(`/console?q=${agent.agent_id}`)).body).toMatch(new RegExp(`${agent.agent_id}[\\s\\S]*?<time datetime=`));

    const revoke = await op.post(`/console/grants/${grant.grant_id}/revoke`, { back: `/console/agents/${agent.agent_id}` });
    expect(revoke.headers.location).toBe(`/console/agents/${agent.agent_id}`);
    const after = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants[0];
    expect(after).toMatchObject({ active: false, revoked_reason: 'admin_grant' });
    expect((await op.get(`/console/agents/${agent.agent_id}`)).body).toMatch(/badge revoked">Revoked/);
    const audit = await op.get(`/console/audit?agent_id=${agent.agent_id}&event=revoked`);
    expect(audit.body).toContain(agent.agent_id);
    expect(audit.body.match(/data-label="Event" class="words">revoked\b/g)).toHaveLength(1);

    // A revoke may only return to a console page.
    expect((await op.post(`/console/grants/${grant.grant_id}/revoke`, { back: 'https://evil.example/' })).headers.location).toBe('/console');

    await op.post(`/console/agents/${agent.agent_id}/active`, { active: 'false' });
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}`)).json.active).toBe(false);
    const rotated = await op.post(`/console/agents/${agent.agent_id}/secret`, {});
    expect(rotated.headers.location).toBe(`/console/agents/${agent.agent_id}`);
    expect((await op.post(`/console/agents/${agent.agent_id}/revoke-grants`, {})).statusCode).toBe(303);
    expect((await op.post('/console/users/revoke-grants', { email: agent.email })).headers.location).toBe(
      `/console/users?email=${encodeURIComponent(agent.email)}`,
    );
    const user = await op.get(`/console/users?email=${encodeURIComponent(agent.email)}`);
    expect(user.body).toContain(agent.agent_id);
    expect(user.body).toContain(client.client_id);
  });

  it('requires DPoP, and DPoP nonces, of a website with the boxes on its page, and shows them', async () => {
    const op = await operator(server);
    const site = await op.post('/console/websites', { name: 'Bound shop', redirect_uris: 'https://bound.example/cb' });
    const clientId = /\/console\/websites\/([\w-]+)/.exec(String(site.headers.location))![1];
    const edit = (box: Record<string, string>) =>
      op.post(`/console/websites/${clientId}`, { name: 'Bound shop', redirect_uris: 'https://bound.example/cb', ...box });
    expect((await op.get(`/console/websites/${clientId}`)).body).toMatch(/id="dpop-bound">Optional</);
    await edit({ dpop_bound_access_tokens: 'true' });
    expect((await op.get(`/console/websites/${clientId}`)).body).toMatch(/id="dpop-bound">Required/);
    expect((await server.adminCall('GET', `/admin/clients/${clientId}`)).json.dpop_bound_access_tokens).toBe(true);
    expect((await op.get(`/console/websites/${clientId}`)).body).toMatch(/id="dpop-nonce">Not required</);
    await edit({ dpop_nonce_required: 'true' });
    expect((await op.get(`/console/websites/${clientId}`)).body).toMatch(/id="dpop-nonce">Required/);
    expect((await server.adminCall('GET', `/admin/clients/${clientId}`)).json).toMatchObject({
      dpop_nonce_required: true,
      dpop_bound_access_tokens: false,
    });
    // An unchecked box sends nothing: DPoP is optional again.
    await edit({});
    expect((await server.adminCall('GET', `/admin/clients/${clientId}`)).json).toMatchObject({
      dpop_nonce_required: false,
      dpop_bound_access_tokens: false,
    });
  });

  it('offers "Sign in as the owner" on a website whose box is checked, and shows an agent made for a client', async () => {
    const op = await operator(server);
    const site = await op.post('/console/websites', { name: 'Notes app', redirect_uris: 'http://127.0.0.1:9/cb' });
    const clientId = /\/console\/websites\/([\w-]+)/.exec(String(site.headers.location))![1];
    expect((await op.get(`/console/websites/${clientId}`)).body).toMatch(/id="owner-sign-in">Not offered/);
    await op.post(`/console/websites/${clientId}`, { name: 'Notes app', redirect_uris: 'http://127.0.0.1:9/cb', owner_sign_in: 'true' });
    expect((await op.get(`/console/websites/${clientId}`)).body).toMatch(/id="owner-sign-in">Offered/);
    expect((await server.adminCall('GET', `/admin/clients/${clientId}`)).json.owner_sign_in).toBe(true);
    const agent = await server.createAgent();
    await server.services.db.query(`UPDATE agents SET client_id = $2 WHERE id = $1`, [agent.agent_id, clientId]);
    expect((await op.get(`/console/agents/${agent.agent_id}`)).body).toMatch(
      new RegExp(`id="agent-client">The app <a href="/console/websites/${clientId}">`),
    );
    expect((await op.get('/console/agents')).body).toContain('Person’s app');
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}`)).json).toMatchObject({ kind: 'client', client_id: clientId });
  });

  it('records what the operator changes here in the audit log as the admin’s, and shows who acted', async () => {
    const op = await operator(server);
    const created = await op.post('/console/agents', { email: 'console-audit@example.com', name: 'Audited' });
    const agentId = /\/console\/agents\/([\w-]+)/.exec(String(created.headers.location))![1];
    await op.post(`/console/agents/${agentId}/active`, { active: 'false' });
    await op.post(`/console/agents/${agentId}/secret`, {});
    await op.post(`/console/agents/${agentId}/secret-enabled`, { secret_enabled: 'false' });
    const site = await op.post('/console/websites', { name: 'Audited shop', redirect_uris: 'https://audited.example/cb' });
    const clientId = /\/console\/websites\/([\w-]+)/.exec(String(site.headers.location))![1];
    await op.post(`/console/websites/${clientId}`, { name: 'Audited shop 2', redirect_uris: 'https://audited.example/cb' });

    const rows = async (query: string) =>
      (await server.adminCall('GET', `/admin/audit?${query}`)).json.events.map((e: { event: string; actor: string; detail: unknown }) => [
        e.event,
        e.actor,
        e.detail,
      ]);
    expect(await rows(`agent_id=${agentId}`)).toEqual([
      ['agent_updated', 'admin', { fields: ['secret_enabled'] }],
      ['agent_secret_rotated', 'admin', { revoke_grants: false }],
      ['agent_updated', 'admin', { fields: ['active'] }],
      ['agent_created', 'admin', null],
    ]);
    expect(await rows(`client_id=${clientId}`)).toEqual([
      // The edit form sends every field it shows, the DPoP box among them.
      ['client_updated', 'admin', { fields: ['name', 'redirect_uris', 'dpop_bound_access_tokens', 'owner_sign_in', 'dpop_nonce_required'] }],
      ['client_created', 'admin', null],
    ]);

    // The audit page says who acted: the admin here, nobody for a sign-in's own steps.
    const page = (await op.get(`/console/audit?agent_id=${agentId}&event=agent_updated`)).body;
    expect(page).toContain('<th scope="col">By</th>');
    expect(page.match(/<td data-label="By">admin<\/td>/g)).toHaveLength(2);
    const { agent } = await signInToCode(server);
    const steps = (await op.get(`/console/audit?agent_id=${agent.agent_id}&event=completed`)).body;
    expect(steps).toContain('<td data-label="By"></td>');
    // The By filter keeps the operator's rows of that agent and drops its sign-in's steps.
    const byAdmin = (await op.get(`/console/audit?agent_id=${agent.agent_id}&actor=admin`)).body;
    expect(byAdmin).toContain('<option selected>admin</option>');
    expect(byAdmin.match(/<td data-label="By">admin<\/td>/g)).toHaveLength(1);
    expect(byAdmin).not.toContain('<td data-label="By"></td>');
    expect((await op.get('/console/audit?actor=agent')).statusCode).toBe(400);
  });

  it('answers unknown records and pages with a 404 page, and bad audit filters with the reason', async () => {
    const op = await operator(server);
    expect((await op.get('/console/websites/client_nope')).statusCode).toBe(404);
    expect((await op.get('/console/agents/agent_nope')).statusCode).toBe(404);
    expect((await op.get('/console/nowhere')).statusCode).toBe(404);
    expect((await op.post('/console/grants/grant_nope/revoke', { back: '/console/agents/x' })).statusCode).toBe(404);
    const audit = await op.get('/console/audit?from=yesterday');
    expect(audit.statusCode).toBe(400);
    expect(audit.body).toContain('role="alert">from:');
    expect((await op.get('/console/users?email=nobody@example.com')).body).toContain('No user has the email nobody@example.com.');
  });

  it('signs out: the cookie is cleared, and a copy of it opens nothing any more while other sessions go on', async () => {
    const op = await operator(server);
    const other = await operator(server);
    const res = await op.post('/console/sign-out', {});
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in');
    expect(res.cookies.find((c) => c.name === 'agent_auth_console')).toMatchObject({ value: '', path: '/console' });

    // The old cookie, replayed (kept by the browser, or stolen): the sign-in form, and no action goes through.
    const replayed = await op.get('/console/websites');
    expect(replayed.statusCode).toBe(303);
    expect(replayed.headers.location).toBe('/console/sign-in');
    const form = await op.get('/console/sign-in');
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('name="token"');
    const before = (await server.adminCall('GET', '/admin/clients')).json.length;
    expect((await op.post('/console/websites', { name: 'After sign-out', redirect_uris: 'https://late.example/cb' })).statusCode).toBe(303);
    expect((await server.adminCall('GET', '/admin/clients')).json.length).toBe(before);

    expect((await other.get('/console/websites')).statusCode).toBe(200);
    // Remembered (as a digest) only until the session would have expired anyway; the purge then drops it.
    const { rows } = await server.services.db.query<{ session_hash: string; expires_at: Date }>('SELECT * FROM console_signed_out');
    const value = decodeURIComponent(op.cookie.slice('agent_auth_console='.length));
    expect(rows).toEqual([{ session_hash: sha256(value), expires_at: new Date(Number(value.split('.')[0]) * 1000) }]);
  });
});

describe(`the console's website page in OpenID Connect mode (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256' });
  });
  afterAll(() => server.close());

  it('sets the ID token algorithm and the logout URI, refuses a metadata address, and shows recent deliveries and failures', async () => {
    const op = await operator(server);
    const client = await server.createClient();
    const page = `/console/websites/${client.client_id}`;
    const edit = (fields: Record<string, string>) =>
      op.post(page, {
        name: 'Shop',
        redirect_uris: client.redirect_uris.join('\n'),
        id_token_signed_response_alg: '',
        backchannel_logout_uri: '',
        ...fields,
      });

    expect((await edit({ id_token_signed_response_alg: 'ES256', backchannel_logout_uri: 'https://shop.example/logout' })).statusCode).toBe(303);
    let body = (await op.get(page)).body;
    expect(body).toMatch(/id="id-token-alg">ES256</);
    expect(body).toContain('<code>https://shop.example/logout</code>');
    expect(body).toContain('No logout token sent yet.');

    const refused = await edit({ backchannel_logout_uri: 'https://169.254.169.254/latest/meta-data' });
    expect(refused.statusCode).toBe(303);
    // The reason travels in the flash cookie to the page the browser is sent back to.
    body = (await op.get(page, cookieHeader(refused))).body;
    expect(body).toMatch(/role="alert">backchannel_logout_uri must not resolve to a link-local/);
    expect(body).toContain('<code>https://shop.example/logout</code>');
    const privateAddress = await edit({ backchannel_logout_uri: 'https://[fd00::1]/logout' });
    body = (await op.get(page, cookieHeader(privateAddress))).body;
    expect(body).toMatch(/role="alert">backchannel_logout_uri must not resolve to a private, shared or unique-local address/);
    expect(body).toContain('<code>https://shop.example/logout</code>');

    // A delivery refused for an hour, and one delivered, as the sender leaves them.
    await server.services.db.query(
      `INSERT INTO logout_deliveries (jti, client_id, agent_id, sid, uri, reason, status, attempts, last_error, delivered_at)
       VALUES ('jti-console-1', $1, 'agent_a', 'grant_a', 'https://shop.example/logout', 'admin_agent', 'failed', 14, 'answered 503', NULL),
              ('jti-console-2', $1, 'agent_b', 'grant_b', 'https://shop.example/logout', 'agent_deleted', 'delivered', 1, NULL, now())`,
      [client.client_id],
    );
    body = (await op.get(page)).body;
    expect(body).toMatch(/id="logout-failures">1 logout token was given up after an hour of refusals; the last: answered 503/);
    expect(body).toMatch(/<table id="logout-deliveries">[\s\S]*agent_a[\s\S]*answered 503[\s\S]*agent_b[\s\S]*delivered/);

    // Empty fields clear both.
    expect((await edit({})).statusCode).toBe(303);
    body = (await op.get(page)).body;
    expect(body).toMatch(/id="id-token-alg">RS256 \(the default\)</);
    expect(body).toMatch(/id="logout-uri">None</);
  });
});
