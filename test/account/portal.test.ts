import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueTokens, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { closeServerWithMail, serverWithMail, signInOwner, startServerWithMail } from '../helpers/owner.js';
import { ISSUER, type TestServer } from '../helpers/server.js';
import type { TestSmtp } from '../helpers/smtp.js';

const fresh = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;
type Owner = Awaited<ReturnType<typeof signInOwner>>;

/** A fresh public JWK, as an agent's code would make one. */
const publicJwk = (type: 'ed25519' | 'ec' = 'ed25519') =>
  (type === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519')).publicKey.export({ format: 'jwk' });

const PAGES = ['/account/agents', '/account/history', '/account/settings', '/account/passkeys', '/account/approvals'];

/** The portal's pages over HTTP: what an owner sees of their own agents, and nothing of anyone else's. */
describe(`the owners' portal pages (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  beforeAll(async () => ({ smtp, server } = await startServerWithMail()));
  afterAll(() => closeServerWithMail({ smtp, server }));

  const page = (url: string, owner?: Owner) => server.app.inject({ url, headers: owner ? { cookie: owner.cookie } : {} });

  /** An owner signed in, with an operator-registered agent signed in at two websites. */
  async function ownerWithAgent() {
    const email = fresh();
    const agent = await server.createAgent(email);
    const shop = await server.createClient(['https://shop.example/callback']);
    const news = await server.createClient(['https://news.example/cb']);
    await server.adminCall('PATCH', `/admin/clients/${news.client_id}`, { name: 'News' });
    const atShop = await issueTokens(server, { client: shop, agent });
    const atNews = await issueTokens(server, { client: news, agent });
    const owner = await signInOwner(server.app, smtp, email);
    return { email, agent, shop, news, atShop, atNews, owner };
  }

  it('sends a visitor without a session to the sign-in page, never caching a page', async () => {
    for (const url of [...PAGES, '/account/agents/agent_whatever']) {
      const res = await page(url);
      expect(res.statusCode, url).toBe(303);
      expect(res.headers.location, url).toBe('/account');
      expect(res.headers['cache-control'], url).toBe('no-store');
    }
    const home = await page('/account');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('Email me a sign-in link');
  });

  it('lists the owner’s agents with status and last sign-in; the agent’s page its websites with a Revoke button each', async () => {
    const { agent, shop, news, owner } = await ownerWithAgent();
    const home = await page('/account', owner);
    expect(home.statusCode).toBe(200);
    expect(home.headers['cache-control']).toBe('no-store');
    expect(home.body).toContain(`<a href="/account/agents/${agent.agent_id}">Test agent</a>`);
    expect(home.body).toContain('<span class="badge on">Active</span>');
    // The newest sign-in: at News, with the model the agent reported.
    const row = home.body.slice(home.body.indexOf(`data-agent="${agent.agent_id}"`));
    expect(row).toMatch(/News<br><span class="muted">https:\/\/news\.example<\/span>/);
    expect(row).toContain('test-model-1');
    expect(row).toContain('2 websites');
    // Navigation, on every page, with the current one marked.
    for (const [url, current] of [
      ['/account', 'Agents'],
      ['/account/history', 'History'],
      ['/account/settings', 'Settings'],
      ['/account/passkeys', 'Passkeys'],
      ['/account/approvals', 'Approvals'],
      [`/account/agents/${agent.agent_id}`, 'Agents'],
    ]) {
      const res = await page(url, owner);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['cache-control'], url).toBe('no-store');
      expect(res.body, url).toMatch(new RegExp(`aria-current="page">${current}</a>`));
      expect(res.body, url).toContain('action="/account/sign-out"');
      // Every script is the server's own: an external file or a tag with this answer's nonce.
      const nonce = /script-src 'self' 'nonce-([0-9a-f]{32})'/.exec(String(res.headers['content-security-policy']))![1];
      for (const tag of res.body.match(/<script[^>]*>/g) ?? []) expect(tag, url).toContain(`nonce="${nonce}"`);
    }

    const agentPage = await page(`/account/agents/${agent.agent_id}`, owner);
    for (const website of [shop, news]) {
      expect(agentPage.body).toContain(`data-api="/account/api/agents/${agent.agent_id}/websites/${website.client_id}" data-method="DELETE"`);
    }
    expect(agentPage.body).toContain('https://shop.example');
    expect(agentPage.body).toContain('aria-label="Revoke News (https://news.example)"');
    for (const action of [`/account/api/agents/${agent.agent_id}/secret`, `/account/api/agents/${agent.agent_id}" data-method="DELETE"`]) {
      expect(agentPage.body).toContain(`data-api="${action}`);
    }
    expect(agentPage.body).toContain('Deactivate');
    expect(agentPage.body).not.toContain(agent.agent_secret);

    // The agent's own approval policy is the one selected; the owner's is named in the first choice.
    expect((await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: 'new_website' })).statusCode).toBe(200);
    const withPolicy = (await page(`/account/agents/${agent.agent_id}`, owner)).body;
    expect(withPolicy).toContain('<option value="new_website" selected>');
    expect(withPolicy).toContain('<option value="">Default (Never ask me)</option>');

    // The buttons' script: this server's own file, which the pages' CSP allows ('self').
    const script = await server.app.inject({ url: '/assets/portal.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.body).toContain("'content-type': 'application/json'");

    // /account/agents is the home's list.
    expect((await page('/account/agents', owner)).headers.location).toBe('/account');
  });

  it('shows the agent’s keys with a Remove each and the form to add one; another owner’s keys never', async () => {
    const alice = await ownerWithAgent();
    const bob = await ownerWithAgent();
    const keysOf = (who: typeof alice) => `/account/api/agents/${who.agent.agent_id}/keys`;
    const agentPage = async (who: typeof alice) => (await page(`/account/agents/${who.agent.agent_id}`, who.owner)).body;

    const none = await agentPage(alice);
    expect(none).toContain('<h2 id="keys-title">Keys</h2>');
    expect(none).toContain('No keys: the agent signs in with its secret.');
    expect(none).toContain(`data-api="${keysOf(alice)}" data-notice="Key added`);
    expect(none).toMatch(/<textarea id="new-key" name="jwk" data-type="json"/);
    // A way an owner can use (a key made in the browser), not an operator's command.
    expect(none).toContain('<button id="make-key" type="button" class="primary">Make a key and download it</button>');
    expect(none).toContain(`window.agentAuthPortal.api('POST', "${keysOf(alice)}"`);
    expect(none).not.toContain('agent-auth agents keys add');
    expect(none).not.toContain('key-only');
    // Rotation signs the agent out everywhere unless the owner unchecks the box.
    expect(none).toMatch(
      /<input type="checkbox" name="revoke_grants" checked data-notice-unchecked="[^"]+"> Also sign this agent out of every website now/,
    );

    const added = await alice.owner.call('POST', keysOf(alice), { jwk: publicJwk() });
    expect(added.statusCode).toBe(201);
    const ec = await alice.owner.call('POST', keysOf(alice), { jwk: publicJwk('ec') });
    expect(ec.statusCode).toBe(201);
    const bobs = await bob.owner.call('POST', keysOf(bob), { jwk: publicJwk() });
    expect(bobs.statusCode).toBe(201);

    const listed = await agentPage(alice);
    for (const [key, alg] of [
      [added, 'EdDSA'],
      [ec, 'ES256'],
    ] as const) {
      const { kid } = key.json() as { kid: string };
      const row = listed.slice(listed.indexOf(`<tr data-kid="${kid}">`));
      expect(row, kid).toMatch(
        new RegExp(
          `^<tr data-kid="${kid}">\\s*<td data-label="Key id"><code class="token">${kid}</code></td>\\s*<td data-label="Algorithm">${alg}</td>`,
        ),
      );
      expect(row, kid).toContain(`<summary aria-label="Remove key ${kid}…">Remove…</summary>`);
      expect(row, kid).toContain(`data-api="${keysOf(alice)}/${kid}" data-method="DELETE"`);
    }
    expect(listed.match(/<tr data-kid=/g)).toHaveLength(2);
    expect(listed).not.toContain(bobs.json().kid);
    expect(await agentPage(bob)).not.toContain(added.json().kid);
    // Bob reaches neither Alice's agent page nor her keys.
    expect((await page(`/account/agents/${alice.agent.agent_id}`, bob.owner)).statusCode).toBe(404);
    expect((await bob.owner.call('GET', keysOf(alice))).statusCode).toBe(404);

    // Key-only, by an operator: the page says so, and what no key would mean.
    expect((await server.adminCall('PATCH', `/admin/agents/${bob.agent.agent_id}`, { secret_enabled: false })).statusCode).toBe(200);
    expect(await agentPage(bob)).toContain('This agent is key-only: it signs in with one of these keys, never with its secret.');
    expect((await bob.owner.call('DELETE', `${keysOf(bob)}/${bobs.json().kid}`)).statusCode).toBe(204);
    expect(await agentPage(bob)).toContain('No keys: this agent cannot sign in until one is added.');
    // The owner API's agents keep their documented shape.
    expect(Object.keys((await bob.owner.call('GET', '/account/api/agents')).json().agents[0])).not.toContain('secret_enabled');
  });

  it('answers another owner’s agent with the 404 page of an agent that does not exist', async () => {
    const alice = await ownerWithAgent();
    const mallory = await signInOwner(server.app, smtp, fresh());
    const foreign = await page(`/account/agents/${alice.agent.agent_id}`, mallory);
    const missing = await page('/account/agents/agent_doesnotexist', mallory);
    expect(foreign.statusCode).toBe(404);
    expect(missing.statusCode).toBe(404);
    const normalise = (body: string, id: string) =>
      body
        .replace(id, 'ID')
        .replace(/[0-9a-f]{32}/g, 'N')
        .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, 'R');
    expect(normalise(foreign.body, alice.agent.agent_id)).toBe(normalise(missing.body, 'agent_doesnotexist'));
    expect(foreign.body).toContain('There is no such agent in your account.');
    expect(foreign.body).not.toContain('Test agent');
    expect((await page('/account', mallory)).body).not.toContain(alice.agent.agent_id);
    // An id no agent could have: refused, never a 500.
    for (const id of ['%00', 'x'.repeat(300)]) expect((await page(`/account/agents/${id}`, mallory)).statusCode).toBeOneOf([404, 414]);
  });

  it('shows each owner their own history only, as a page and as JSON, a page at a time', async () => {
    const alice = await ownerWithAgent();
    const bob = await ownerWithAgent();
    // Bob acts on his agent; Alice's history must not show it, nor his sign-ins.
    expect((await bob.owner.call('POST', `/account/api/agents/${bob.agent.agent_id}/secret`)).statusCode).toBe(200);
    expect((await bob.owner.call('DELETE', `/account/api/agents/${bob.agent.agent_id}/websites/${bob.shop.client_id}`)).statusCode).toBe(204);

    const history = await alice.owner.call('GET', '/account/api/history?limit=200');
    expect(history.statusCode).toBe(200);
    expect(history.headers['cache-control']).toBe('no-store');
    const events = history.json().events as { event: string; agent_id: string | null; client_name: string | null; actor: string | null }[];
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['owner_signed_in', 'token_issued', 'completed']));
    expect(events.filter((e) => e.event === 'token_issued').map((e) => e.client_name)).toEqual(['News', 'Shop']);
    expect(events.every((e) => e.agent_id === null || e.agent_id === alice.agent.agent_id)).toBe(true);
    expect(JSON.stringify(events)).not.toContain(bob.agent.agent_id);
    expect(JSON.stringify(events)).not.toContain(bob.email);
    const bobs = (await bob.owner.call('GET', '/account/api/history?limit=200')).json().events as { event: string; actor: string | null }[];
    expect(bobs.filter((e) => e.actor === 'owner').map((e) => e.event)).toEqual(expect.arrayContaining(['revoked', 'agent_secret_rotated']));
    // Filtering by another owner's agent finds nothing of it.
    expect((await alice.owner.call('GET', `/account/api/history?agent_id=${bob.agent.agent_id}`)).json()).toEqual({ events: [], next_cursor: null });

    // Paging: two at a time, newest first, with no row twice.
    const first = (await alice.owner.call('GET', '/account/api/history?limit=2')).json();
    expect(first.events).toHaveLength(2);
    const second = (await alice.owner.call('GET', `/account/api/history?limit=2&cursor=${first.next_cursor}`)).json();
    expect(second.events[0].id).toBeLessThan(first.events[1].id);

    const pageBody = (await page('/account/history', alice.owner)).body;
    // In sentences, not the audit log's codes.
    expect(pageBody).toMatch(/Test agent signed in to \w+/);
    expect(pageBody).not.toContain('token_issued');
    expect(pageBody).toContain(`<a href="/account/agents/${alice.agent.agent_id}">Test agent</a>`);
    expect(pageBody).not.toContain(bob.agent.agent_id);
    const paged = await page(`/account/history?agent_id=${alice.agent.agent_id}&limit=1`, alice.owner);
    expect(paged.body).toMatch(/href="\/account\/history\?agent_id=[\w-]+&amp;cursor=\d+" rel="next"/);
    // A cursor typed by hand starts over rather than failing.
    expect((await page('/account/history?cursor=abc', alice.owner)).statusCode).toBe(200);

    for (const bad of ['cursor=abc', 'limit=0', 'limit=201', `agent_id=${'x'.repeat(201)}`]) {
      const res = await alice.owner.call('GET', `/account/api/history?${bad}`);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error, bad).toBe('invalid_request');
    }
    const anonymous = await server.app.inject({ url: '/account/api/history' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error).toBe('login_required');
  });

  it('shows the last sign-in of an agent whose websites were all revoked', async () => {
    const { agent, owner, atShop } = await ownerWithAgent();
    expect((await owner.call('POST', '/account/api/revoke-all')).statusCode).toBe(204);
    expect((await userinfo(server, atShop.access_token)).statusCode).toBe(401);
    const [listed] = (await owner.call('GET', '/account/api/agents')).json().agents;
    expect(listed.websites).toEqual([]);
    expect(listed.last_sign_in).toMatchObject({ client_name: 'News', redirect_origin: 'https://news.example', model: 'test-model-1' });
    const body = (await page(`/account/agents/${agent.agent_id}`, owner)).body;
    expect(body).toContain('None: this agent holds no live sign-in anywhere.');
    expect(body).toMatch(/at News <span class="muted">\(https:\/\/news\.example\)<\/span> with test-model-1/);
  });

  it('settings: notices and approval policy; "Sign out everywhere" ends every session of the owner', async () => {
    const email = fresh();
    const here = await signInOwner(server.app, smtp, email);
    const there = await signInOwner(server.app, smtp, email);
    expect((await here.call('PATCH', '/account/api/me', { notify_new_website: false, approval_policy: 'always' })).statusCode).toBe(200);
    const settings = await page('/account/settings', here);
    expect(settings.body).toContain('<option value="always" selected>');
    expect(settings.body).toMatch(/<input type="checkbox" name="notify_new_website">/);
    expect(settings.body).toContain('data-api="/account/api/me" data-method="PATCH"');

    const token = /name="_csrf" value="([^"]+)"/.exec(settings.body)![1];
    const signOut = (fields: Record<string, string>) =>
      server.app.inject({
        method: 'POST',
        url: '/account/sign-out',
        headers: { cookie: here.cookie, accept: 'text/html', origin: ISSUER, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(fields).toString(),
      });
    expect((await signOut({ _csrf: 'forged', everywhere: '1' })).statusCode).toBe(403);
    expect((await there.call('GET', '/account/api/me')).statusCode).toBe(200);
    const out = await signOut({ _csrf: token, everywhere: '1' });
    expect(out.statusCode).toBe(303);
    expect((await here.call('GET', '/account/api/me')).statusCode).toBe(401);
    expect((await there.call('GET', '/account/api/me')).statusCode).toBe(401);
    expect((await page('/account/settings', there)).headers.location).toBe('/account');
  });
});

describe(`the portal with OWNER_AGENT_CREATION=false (${storeName})`, () => {
  const started = serverWithMail({ OWNER_AGENT_CREATION: 'false' });

  it('offers no form to create an agent', async () => {
    const { server, smtp } = started;
    const owner = await signInOwner(server.app, smtp, fresh());
    const home = await server.app.inject({ url: '/account', headers: { cookie: owner.cookie } });
    expect(home.statusCode).toBe(200);
    expect(home.body).not.toContain('Create an agent');
    expect(home.body).toContain('No agents yet.</p>');
  });
});
