import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode, introspect, issueTokens, refresh, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, signInToCode, startAuthorize } from '../helpers/flow.js';
import { closeServerWithMail, mailedLink, signInOwner, startServerWithMail, useLink } from '../helpers/owner.js';
import { within } from '../helpers/poll.js';
import { startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';
import type { TestSmtp } from '../helpers/smtp.js';

const fresh = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;
type Owner = Awaited<ReturnType<typeof signInOwner>>;

describe(`owners control their agents (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  beforeAll(async () => ({ smtp, server } = await startServerWithMail({ ID_TOKEN_SIGNING_ALG: 'ES256' })));
  afterAll(() => closeServerWithMail({ smtp, server }));

  /** An owner with an agent they created, signed in at two websites. */
  async function ownerWithSignIns(owner: Owner, email: string) {
    const created = await owner.call('POST', '/account/api/agents', { name: 'Shopping agent' });
    expect(created.statusCode).toBe(201);
    const agent = { ...created.json(), email };
    const shop = await server.createClient(['https://shop.example/callback']);
    const news = await server.createClient(['https://news.example/cb']);
    const atShop = await issueTokens(server, { client: shop, agent });
    const atNews = await issueTokens(server, { client: news, agent });
    return { agent, shop, news, atShop, atNews };
  }

  it('lists, creates (secret once), changes, rotates and deletes the owner’s agents', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('GET', '/account/api/agents')).json()).toEqual({ agents: [] });
    const { agent, shop, news } = await ownerWithSignIns(owner, email);
    expect(agent.agent_secret).toMatch(/^aa_as_/);

    const listed = (await owner.call('GET', '/account/api/agents')).json().agents;
    expect(listed).toHaveLength(1);
    expect(listed[0]).not.toHaveProperty('agent_secret');
    expect(listed[0]).toMatchObject({ agent_id: agent.agent_id, name: 'Shopping agent', active: true, approval_policy: null });
    expect(listed[0].websites.map((w: { client_id: string }) => w.client_id).sort()).toEqual([shop.client_id, news.client_id].sort());
    const atShop = listed[0].websites.find((w: { client_id: string }) => w.client_id === shop.client_id);
    expect(atShop).toMatchObject({
      client_name: 'Shop',
      redirect_origin: 'https://shop.example',
      scope: expect.any(String),
      last_model: 'test-model-1',
    });
    expect(Date.parse(atShop.first_sign_in_at)).toBeLessThanOrEqual(Date.parse(atShop.last_sign_in_at));

    const patched = await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, { name: 'Renamed', approval_policy: 'always' });
    expect(patched.json()).toMatchObject({ name: 'Renamed', approval_policy: 'always', active: true });
    expect(patched.json().websites).toHaveLength(2);
    expect((await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: null })).json().approval_policy).toBeNull();

    const rotated = await owner.call('POST', `/account/api/agents/${agent.agent_id}/secret`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().agent_secret).not.toBe(agent.agent_secret);
    const started = await startAuthorize(server, shop);
    expect(
      (await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).statusCode,
    ).toBe(401);
    expect(
      (await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: rotated.json().agent_secret }))
        .statusCode,
    ).toBe(200);

    for (const bad of [{}, { name: 5 }, { active: 'no' }, { approval_policy: 'sometimes' }, { secret: 'x' }]) {
      const res = await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, bad);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    expect((await owner.call('POST', '/account/api/agents', { name: 'x', email: 'other@example.com' })).statusCode).toBe(400);

    expect((await owner.call('DELETE', `/account/api/agents/${agent.agent_id}`)).statusCode).toBe(204);
    expect((await owner.call('GET', '/account/api/agents')).json()).toEqual({ agents: [] });
    expect((await owner.call('DELETE', `/account/api/agents/${agent.agent_id}`)).statusCode).toBe(404);

    // Every action is in the audit log as the owner's, and the operators' filter by actor finds exactly those.
    const audit = (await server.adminCall('GET', `/admin/audit?email=${encodeURIComponent(email)}&limit=200`)).json.events;
    const owners = audit.filter((e: { actor: string | null }) => e.actor === 'owner');
    expect(owners.map((e: { event: string }) => e.event)).toEqual(
      expect.arrayContaining(['owner_signed_in', 'agent_created', 'agent_updated', 'agent_secret_rotated', 'agent_deleted']),
    );
    const byOwner = (await server.adminCall('GET', `/admin/audit?email=${encodeURIComponent(email)}&actor=owner&limit=200`)).json.events;
    expect(byOwner).toEqual(owners);
    expect((await server.adminCall('GET', `/admin/audit?email=${encodeURIComponent(email)}&actor=admin`)).json.events).toEqual([]);
    expect((await server.adminCall('GET', '/admin/audit?actor=agent')).json.error).toBe('invalid_request');
  });

  it('rotating the secret ends the agent’s tokens unless revoke_grants is false; a deactivation keeps nothing for a reactivation', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    const { agent, shop, news, atShop, atNews } = await ownerWithSignIns(owner, email);
    const active = async (client: typeof shop, token: string) => (await introspect(server, client, token)).json().active;

    const kept = await owner.call('POST', `/account/api/agents/${agent.agent_id}/secret`, { revoke_grants: false });
    expect(kept.statusCode).toBe(200);
    expect(kept.json().websites).toHaveLength(2);
    expect(await active(shop, atShop.access_token)).toBe(true);
    expect((await owner.call('POST', `/account/api/agents/${agent.agent_id}/secret`, { revoke_grants: 'no' })).statusCode).toBe(400);

    // A sign-in in flight, then the default rotation: it ends with the tokens.
    const withCode = await signInToCode(server, { client: shop, agent: { ...agent, agent_secret: kept.json().agent_secret } });
    const rotated = await owner.call('POST', `/account/api/agents/${agent.agent_id}/secret`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().websites).toEqual([]);
    expect(await active(shop, atShop.access_token)).toBe(false);
    expect(await active(news, atNews.access_token)).toBe(false);
    expect((await exchangeCode(server, shop, withCode.code, withCode.verifier)).json().error).toBe('invalid_grant');
    const audit = (await server.adminCall('GET', `/admin/audit?agent_id=${agent.agent_id}&event=revoked`)).json.events;
    expect(audit.map((e: { actor: string }) => e.actor)).toEqual(['owner', 'owner']);

    // Deactivated and reactivated by the owner: a code minted before does not come back.
    const before = await signInToCode(server, { client: news, agent: { ...agent, agent_secret: rotated.json().agent_secret } });
    expect((await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, { active: false })).statusCode).toBe(200);
    expect((await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, { active: true })).statusCode).toBe(200);
    expect((await exchangeCode(server, news, before.code, before.verifier)).json().error).toBe('invalid_grant');
  });

  it('answers another owner’s agent as if it did not exist, and every call without a session with 401', async () => {
    const aliceEmail = fresh();
    const alice = await signInOwner(server.app, smtp, aliceEmail);
    const mallory = await signInOwner(server.app, smtp, fresh());
    const { agent, shop } = await ownerWithSignIns(alice, aliceEmail);
    const unknown = 'agent_doesnotexist';
    const calls: [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: (id: string) => string, body?: unknown][] = [
      ['PATCH', (id) => `/account/api/agents/${id}`, { active: false }],
      ['POST', (id) => `/account/api/agents/${id}/secret`],
      ['DELETE', (id) => `/account/api/agents/${id}/websites/${shop.client_id}`],
      ['DELETE', (id) => `/account/api/agents/${id}`],
    ];
    for (const [method, path, body] of calls) {
      const foreign = await mallory.call(method, path(agent.agent_id), body);
      const missing = await mallory.call(method, path(unknown), body);
      expect(foreign.statusCode, `${method} ${path('…')}`).toBe(404);
      expect(foreign.json()).toEqual({ error: 'not_found', error_description: `no agent with id ${agent.agent_id}` });
      expect(missing.json()).toEqual({ error: 'not_found', error_description: `no agent with id ${unknown}` });
      const anonymous = await server.app.inject({
        method,
        url: path(agent.agent_id),
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(body ?? {}),
      });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json().error).toBe('login_required');
    }
    for (const [method, url] of [
      ['GET', '/account/api/agents'],
      ['POST', '/account/api/agents'],
      ['POST', '/account/api/revoke-all'],
    ] as const) {
      expect((await server.app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload: '{}' })).statusCode).toBe(401);
    }
    // Mallory's kill switch leaves Alice's agent alone; Alice's agent is untouched throughout.
    expect((await mallory.call('POST', '/account/api/revoke-all')).statusCode).toBe(204);
    expect((await alice.call('GET', '/account/api/agents')).json().agents[0]).toMatchObject({ agent_id: agent.agent_id, active: true });
    expect((await alice.call('GET', '/account/api/agents')).json().agents[0].websites).toHaveLength(2);
  });

  it('revokes one website at once on every instance, while the other keeps working', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    const { agent, shop, news, atShop, atNews } = await ownerWithSignIns(owner, email);
    const other = await startSecondInstance(server);
    try {
      expect((await userinfo(other, atShop.access_token)).statusCode).toBe(200);
      const revoked = await owner.call('DELETE', `/account/api/agents/${agent.agent_id}/websites/${shop.client_id}`);
      expect(revoked.statusCode).toBe(204);
      expect((await userinfo(server, atShop.access_token)).statusCode).toBe(401);
      // The other instance's grant cache forgets the grant when the database announces it.
      expect(await within(5000, async () => (await userinfo(other, atShop.access_token)).statusCode === 401)).toBe(true);
      expect((await refresh(server, shop, atShop.refresh_token)).statusCode).toBe(400);
      expect((await userinfo(other, atNews.access_token)).statusCode).toBe(200);
      expect((await refresh(server, news, atNews.refresh_token)).statusCode).toBe(200);
      const websites = (await owner.call('GET', '/account/api/agents')).json().agents[0].websites;
      expect(websites.map((w: { client_id: string }) => w.client_id)).toEqual([news.client_id]);
      const audit = (await server.adminCall('GET', `/admin/audit?agent_id=${agent.agent_id}&event=revoked`)).json.events;
      expect(audit[0]).toMatchObject({ actor: 'owner', reason: 'owner_website', client_id: shop.client_id });
    } finally {
      await other.close();
    }
  });

  it('pulls the kill switch: every grant and every sign-in in flight of every agent ends', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    const { agent, shop, atShop, atNews } = await ownerWithSignIns(owner, email);
    const second = { ...(await owner.call('POST', '/account/api/agents', { name: 'Second' })).json(), email };
    const secondTokens = await issueTokens(server, { client: shop, agent: second });
    // In flight: one authenticated, one with its code not yet exchanged.
    const authenticated = await startAuthorize(server, shop);
    await agentAuthenticate(server, { request_id: authenticated.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    const withCode = await signInToCode(server, { client: shop, agent: second });

    expect((await owner.call('POST', '/account/api/revoke-all')).statusCode).toBe(204);
    for (const tokens of [atShop, atNews, secondTokens]) expect((await userinfo(server, tokens.access_token)).statusCode).toBe(401);
    const status = await server.app.inject({ url: `/api/check-status?request_id=${authenticated.requestId}` });
    expect(status.json()).toMatchObject({ status: 'error', error: 'access_denied' });
    expect((await exchangeCode(server, shop, withCode.code, withCode.verifier)).statusCode).toBe(400);
    const agents = (await owner.call('GET', '/account/api/agents')).json().agents;
    expect(agents.flatMap((a: { websites: unknown[] }) => a.websites)).toEqual([]);
    // The agents stay; they can sign in afresh.
    expect(agents.every((a: { active: boolean }) => a.active)).toBe(true);
  });

  it('refuses agent creation with 403 forbidden when OWNER_AGENT_CREATION=false', async () => {
    const locked = await startTestServer({ SMTP_URL: smtp.url, OWNER_AGENT_CREATION: 'false' });
    try {
      const owner = await signInOwner(locked.app, smtp, fresh());
      const res = await owner.call('POST', '/account/api/agents', { name: 'Nope' });
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toBe('forbidden');
      expect((await owner.call('GET', '/account/api/agents')).json()).toEqual({ agents: [] });
    } finally {
      await locked.close();
    }
  });

  it('puts the true email_verified in ID tokens; an operator’s email change unverifies it', async () => {
    const agent = await server.createAgent();
    const scope = 'openid email';
    const before = await signInToCode(server, { agent, scope });
    const unverified = decodeJwt((await exchangeCode(server, before.client, before.code, before.verifier)).json().id_token);
    expect(unverified).toMatchObject({ email: agent.email, email_verified: false });

    const owner = await signInOwner(server.app, smtp, agent.email);
    const after = await signInToCode(server, { agent, client: before.client, scope });
    const verified = decodeJwt((await exchangeCode(server, after.client, after.code, after.verifier)).json().id_token);
    expect(verified).toMatchObject({ email: agent.email, email_verified: true });

    const newEmail = fresh();
    // A link mailed to the old address before the change proves that address only.
    const oldLink = await mailedLink(server.app, smtp, agent.email);
    const changed = await server.adminCall('PATCH', `/admin/users?email=${encodeURIComponent(agent.email)}`, { email: newEmail });
    expect(changed.statusCode).toBe(200);
    expect(changed.json).toEqual({ email: newEmail, email_verified: false });
    expect((await owner.call('GET', '/account/api/me')).json()).toMatchObject({ email: newEmail, email_verified: false });
    const moved = await signInToCode(server, { agent, client: before.client, scope });
    expect(decodeJwt((await exchangeCode(server, moved.client, moved.code, moved.verifier)).json().id_token)).toMatchObject({
      email: newEmail,
      email_verified: false,
    });
    expect((await useLink(server.app, oldLink)).statusCode).toBe(303);
    expect((await owner.call('GET', '/account/api/me')).json()).toMatchObject({ email: newEmail, email_verified: false });
    // Until a link to the new address is used: verified again, and so say ID tokens.
    await signInOwner(server.app, smtp, newEmail);
    expect((await owner.call('GET', '/account/api/me')).json()).toMatchObject({ email: newEmail, email_verified: true });
    const reverified = await signInToCode(server, { agent, client: before.client, scope });
    expect(decodeJwt((await exchangeCode(server, reverified.client, reverified.code, reverified.verifier)).json().id_token)).toMatchObject({
      email: newEmail,
      email_verified: true,
    });

    expect((await server.adminCall('PATCH', `/admin/users?email=nobody@example.com`, { email: fresh() })).statusCode).toBe(404);
    const other = await server.createAgent();
    const taken = await server.adminCall('PATCH', `/admin/users?email=${encodeURIComponent(newEmail)}`, { email: other.email });
    expect(taken.statusCode).toBe(409);
    const audit = (await server.adminCall('GET', `/admin/audit?email=${encodeURIComponent(newEmail)}&event=owner_email_changed`)).json.events;
    expect(audit[0]).toMatchObject({ actor: 'admin' });
  });

  it('records operators’ changes as the admin’s', async () => {
    const agent = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name: 'x' });
    await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`);
    const events = (await server.adminCall('GET', `/admin/audit?agent_id=${agent.agent_id}`)).json.events;
    expect(events.map((e: { event: string; actor: string }) => [e.event, e.actor])).toEqual([
      ['agent_updated', 'admin'],
      ['agent_created', 'admin'],
    ]);
  });
});

describe(`REQUIRE_VERIFIED_EMAIL and notices (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  beforeAll(async () => ({ smtp, server } = await startServerWithMail({ REQUIRE_VERIFIED_EMAIL: 'true' })));
  afterAll(() => closeServerWithMail({ smtp, server }));

  it('refuses authenticate with 403 email_not_verified while the owner has not proved the mailbox', async () => {
    const agent = await server.createAgent();
    const client = await server.createClient();
    const credentials = { agent_id: agent.agent_id, agent_secret: agent.agent_secret };
    const withEmail = await startAuthorize(server, client, { scope: 'email' });
    expect(withEmail.res.statusCode).toBe(200);
    const refused = await agentAuthenticate(server, { request_id: withEmail.requestId, ...credentials });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toBe('email_not_verified');
    await signInOwner(server.app, smtp, agent.email);
    // The same request, now that the owner proved the mailbox.
    expect((await agentAuthenticate(server, { request_id: withEmail.requestId, ...credentials })).statusCode).toBe(200);
  });

  it('mails the owner the first time an agent signs in to a website, once, unless turned off', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    const agent = { ...(await owner.call('POST', '/account/api/agents', { name: 'Reader' })).json(), email };
    const client = await server.createClient(['https://paper.example/cb']);
    await issueTokens(server, { client, agent });
    const notice = await smtp.next(email);
    expect(notice.subject).toBe('Reader signed in to Shop');
    expect(notice.text).toContain('https://paper.example');
    expect(notice.text).toContain('test-model-1');
    expect(notice.text).toContain(`http://localhost:3000/account/agents/${agent.agent_id}`);
    await issueTokens(server, { client, agent });
    const other = await server.createClient(['https://other.example/cb']);
    await owner.call('PATCH', '/account/api/me', { notify_new_website: false });
    // Turning notices off weakens the owner's guard: that is mailed, at once (src/owners/protection.ts).
    expect((await smtp.next(email)).text).toContain('were turned off');
    await issueTokens(server, { client: other, agent });
    await expect(smtp.next(email, 500)).rejects.toThrow(/no mail/);
  });

  it('sends one notice per agent and website: another agent gets its own, two instances at once send one, and turned on again it mails', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    const newAgent = async (name: string) => ({ ...(await owner.call('POST', '/account/api/agents', { name })).json(), email });
    const [first, second] = [await newAgent('First'), await newAgent('Second')];
    const client = await server.createClient(['https://paper.example/cb']);
    const noticeFor = (agent: string) => (mail: { subject: string }) => mail.subject === `${agent} signed in to Shop`;

    await issueTokens(server, { client, agent: first });
    await smtp.next(email, 5000, noticeFor('First'));
    await issueTokens(server, { client, agent: second });
    await smtp.next(email, 5000, noticeFor('Second'));

    // A new website, signed in to at once on two instances over one database: one mail.
    const other = await startSecondInstance(server);
    try {
      const news = await server.createClient(['https://news.example/cb']);
      await Promise.all([issueTokens(server, { client: news, agent: first }), issueTokens(other, { client: news, agent: first })]);
      await smtp.next(email, 5000, noticeFor('First'));
      await expect(smtp.next(email, 700)).rejects.toThrow(/no mail/);
    } finally {
      await other.close();
    }

    // Off, then on again: websites first signed in to while it was on or off are not mailed again; a new one is.
    await owner.call('PATCH', '/account/api/me', { notify_new_website: false });
    expect((await smtp.next(email)).text).toContain('were turned off');
    const quiet = await server.createClient(['https://quiet.example/cb']);
    await issueTokens(server, { client: quiet, agent: second });
    await owner.call('PATCH', '/account/api/me', { notify_new_website: true });
    await issueTokens(server, { client: quiet, agent: second });
    await issueTokens(server, { client, agent: first });
    await expect(smtp.next(email, 500)).rejects.toThrow(/no mail/);
    const later = await server.createClient(['https://later.example/cb']);
    await issueTokens(server, { client: later, agent: second });
    expect((await smtp.next(email, 5000)).text).toContain('https://later.example');
  });
});
