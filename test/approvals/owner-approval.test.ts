import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpired } from '../../src/jobs/purge.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, authenticatedAnswer, checkStatus, completeInBrowser, setRequestExpiry, startAuthorize } from '../helpers/flow.js';
import { signInOwner } from '../helpers/owner.js';
import { ISSUER, startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { SoftwareAuthenticator } from '../helpers/webauthn.js';

type Owner = Awaited<ReturnType<typeof signInOwner>>;

describe(`owner approval of agents' sign-ins (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startTestServer({ SMTP_URL: smtp.url, RATE_LIMIT_EMAIL_LINK_PER_IP: '1000', RATE_LIMIT_EMAIL_LINK_PER_EMAIL: '1000' });
    client = await server.createClient();
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });

  /** An agent and its owner, signed in to the portal by email link, with the owner's approval policy. */
  async function ownerWithAgent(policy: 'never' | 'new_website' | 'always' = 'always') {
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const agent = await server.createAgent(email);
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('PATCH', '/account/api/me', { approval_policy: policy })).statusCode).toBe(200);
    return { email, agent, owner };
  }

  /** A sign-in the agent has authenticated: its id, the browser's cookie, the authenticate answer. */
  async function authenticatedSignIn(agent: { agent_id: string; agent_secret: string }, on = server) {
    const started = await startAuthorize(on, client);
    const auth = await agentAuthenticate(on, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.statusCode).toBe(200);
    return { ...started, auth: auth.json() };
  }

  const decide = (owner: Owner, requestId: string, body: object, on = server) =>
    owner.call('POST', `/account/api/approvals/${requestId}`, body, on.app);

  it('never (the default): the sign-in goes on as before, without an approval field', async () => {
    const { agent } = await ownerWithAgent('never');
    const signIn = await authenticatedSignIn(agent);
    expect(signIn.auth).toEqual(authenticatedAnswer(signIn.requestId, client));
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({ status: 'authenticated' });
    expect((await completeInBrowser(server, signIn.requestId, signIn.cookie)).code).toBeDefined();
  });

  it('always: the sign-in waits for the owner, who is mailed, lists it, approves it with a fresh email sign-in, and the code follows', async () => {
    const { email, agent, owner } = await ownerWithAgent('always');
    const signIn = await authenticatedSignIn(agent);
    expect(signIn.auth).toEqual({ ...authenticatedAnswer(signIn.requestId, client), approval: 'pending' });
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({ status: 'authenticated', approval: 'pending' });

    // The page waits, says who must approve, shows the match code; no code is issued.
    const page = await completeInBrowser(server, signIn.requestId, signIn.cookie);
    expect(page.res.statusCode).toBe(200);
    expect(page.code).toBeUndefined();
    const matchCode = /id="match-code"[^>]*>([^<]+)</.exec(page.res.body)?.[1];
    expect(matchCode).toMatch(/^[2-9A-Z]{3}-[2-9A-Z]{3}$/);
    expect(page.res.body).toContain(email);

    const mail = await smtp.next(email);
    expect(mail.subject).toContain(matchCode);
    expect(mail.text).toContain(`${ISSUER}/account/approvals`);
    expect(mail.text).toContain('Shop');

    const listed = await owner.call('GET', '/account/api/approvals');
    expect(listed.json()).toEqual({
      approvals: [
        {
          request_id: signIn.requestId,
          match_code: matchCode,
          agent_id: agent.agent_id,
          agent_name: 'Test agent',
          model: 'test-model-1',
          client_id: client.client_id,
          client_name: 'Shop',
          redirect_origin: 'https://shop.example',
          scope: expect.any(String),
          created_at: expect.any(String),
          expires_at: expect.any(String),
        },
      ],
    });

    const approved = await decide(owner, signIn.requestId, { decision: 'approve' });
    expect(approved.statusCode).toBe(200);
    expect(approved.json()).toEqual({});
    expect((await decide(owner, signIn.requestId, { decision: 'approve' })).statusCode).toBe(200);
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({ status: 'authenticated', approval: 'approved' });
    expect((await owner.call('GET', '/account/api/approvals')).json()).toEqual({ approvals: [] });
    const done = await completeInBrowser(server, signIn.requestId, signIn.cookie);
    expect(done.code).toBeDefined();
    // Still idempotent once the code is out.
    expect((await decide(owner, signIn.requestId, { decision: 'approve' })).statusCode).toBe(200);
  });

  it('new_website: asks only where the agent holds no live grant; an agent’s own policy overrides its owner’s', async () => {
    const { agent, owner } = await ownerWithAgent('new_website');
    const first = await authenticatedSignIn(agent);
    expect(first.auth.approval).toBe('pending');
    expect((await decide(owner, first.requestId, { decision: 'approve' })).statusCode).toBe(200);
    const { code, res } = await completeInBrowser(server, first.requestId, first.cookie);
    expect(res.statusCode).toBe(302);
    const token = await server.app.inject({
      method: 'POST',
      url: '/token',
      payload: {
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uris[0],
        client_id: client.client_id,
        client_secret: client.client_secret,
        code_verifier: first.verifier,
      },
    });
    expect(token.statusCode).toBe(200);
    // A live grant with this website now: no approval asked.
    const second = await authenticatedSignIn(agent);
    expect(second.auth.approval).toBeUndefined();
    // Another website is new.
    const other = await server.createClient(['https://other.example/cb']);
    const started = await startAuthorize(server, other);
    const auth = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.json().approval).toBe('pending');

    // The agent's own policy, set by its owner, wins over the owner's: never here; null goes back to the owner's.
    const setPolicy = async (policy: string | null) => {
      const res = await owner.call('PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: policy });
      expect(res.statusCode).toBe(200);
      expect(res.json().approval_policy).toBe(policy);
    };
    const approvalAt = async (website: typeof other) => {
      const { requestId } = await startAuthorize(server, website);
      return (await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).json().approval;
    };
    await setPolicy('never');
    expect(await approvalAt(other)).toBeUndefined();
    // always: even the website it holds a live grant with asks again.
    await setPolicy('always');
    expect(await approvalAt(client)).toBe('pending');
    await setPolicy(null);
    expect(await approvalAt(client)).toBeUndefined();
    expect(await approvalAt(other)).toBe('pending');
  });

  it('deny ends the sign-in as access_denied everywhere: check-status, authenticate, the page', async () => {
    const { agent, owner } = await ownerWithAgent('always');
    const signIn = await authenticatedSignIn(agent);
    const denied = await decide(owner, signIn.requestId, { decision: 'deny' });
    expect(denied.statusCode).toBe(200);
    expect((await decide(owner, signIn.requestId, { decision: 'deny' })).statusCode).toBe(200);
    // The answer tells the owner's denial from any other access_denied.
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({
      status: 'error',
      error: 'access_denied',
      error_description: "the agent's owner denied this sign-in",
      approval: 'denied',
    });
    const again = await agentAuthenticate(server, { request_id: signIn.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(again.statusCode).toBe(403);
    expect(again.json()).toEqual({ error: 'access_denied', error_description: "the agent's owner denied this sign-in" });
    // One denial in the audit log, no approval; then the refused authentication.
    const rows = await server.services.store.auditLog.list({ requestId: signIn.requestId, limit: 10 });
    expect(rows.map((r) => [r.event, r.reason]).reverse()).toEqual([
      ['authorize_started', null],
      ['agent_authenticated', null],
      ['approval_requested', null],
      ['denied', 'access_denied'],
      ['agent_authentication_failed', 'request_denied'],
    ]);
    const page = await completeInBrowser(server, signIn.requestId, signIn.cookie);
    expect(page.res.statusCode).toBe(400);
    expect(page.res.body).toContain('access_denied');
    // Denied cannot be approved after all.
    const approve = await decide(owner, signIn.requestId, { decision: 'approve' });
    expect(approve.statusCode).toBe(400);
    expect(approve.json().error).toBe('invalid_request');
  });

  it('refuses an email sign-in older than 5 minutes, another owner (404), an expired request, and anything the agent or its browser holds', async () => {
    const { email, agent, owner } = await ownerWithAgent('always');
    const signIn = await authenticatedSignIn(agent);
    await smtp.next(email);

    // What the agent and its browser hold: the agent's secret, the binding cookie, the request id.
    const noSession = await server.app.inject({
      method: 'POST',
      url: `/account/api/approvals/${signIn.requestId}`,
      headers: { 'content-type': 'application/json', origin: ISSUER, cookie: signIn.cookie!, authorization: `Bearer ${agent.agent_secret}` },
      payload: JSON.stringify({ decision: 'approve' }),
    });
    expect(noSession.statusCode).toBe(401);
    expect(noSession.json().error).toBe('login_required');
    // Another owner, with a fresh session of their own.
    const stranger = (await ownerWithAgent('always')).owner;
    for (const url of [`/account/api/approvals/${signIn.requestId}`, `/account/api/approvals/${signIn.requestId}/options`]) {
      const res = await stranger.call('POST', url, { decision: 'approve' });
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toBe('not_found');
    }
    expect((await decide(stranger, signIn.requestId, { decision: 'deny' })).statusCode).toBe(404);
    expect((await stranger.call('GET', '/account/api/approvals')).json()).toEqual({ approvals: [] });
    // A page of another site cannot make the owner's browser approve.
    const foreign = await server.app.inject({
      method: 'POST',
      url: `/account/api/approvals/${signIn.requestId}`,
      headers: { 'content-type': 'application/json', origin: 'https://evil.example', cookie: owner.cookie },
      payload: JSON.stringify({ decision: 'approve' }),
    });
    expect(foreign.statusCode).toBe(403);

    // The owner's session is older than 5 minutes: approving needs a fresh sign-in.
    await server.services.db.query(`UPDATE owner_sessions SET authenticated_at = now() - interval '6 minutes'`);
    const stale = await decide(owner, signIn.requestId, { decision: 'approve' });
    expect(stale.statusCode).toBe(403);
    expect(stale.json().error).toBe('fresh_authentication_required');
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({ status: 'authenticated', approval: 'pending' });

    // Expired: neither approved nor denied.
    const fresh = await signInOwner(server.app, smtp, email);
    await setRequestExpiry(server, signIn.requestId, -1);
    for (const decision of ['approve', 'deny']) {
      const res = await decide(fresh, signIn.requestId, { decision });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('request_expired');
    }
    expect((await checkStatus(server, signIn.requestId)).json()).toMatchObject({ status: 'error', error: 'request_expired' });
  });

  it('with a passkey: registered with user verification, then approval takes an assertion over that sign-in’s challenge', async () => {
    const { agent, owner } = await ownerWithAgent('always');
    const authenticator = new SoftwareAuthenticator(ISSUER);
    const options = (await owner.call('POST', '/account/api/passkeys/registration-options')).json();
    expect(options).toMatchObject({
      rp: { id: 'localhost' },
      attestation: 'none',
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      pubKeyCredParams: [{ alg: -8 }, { alg: -7 }, { alg: -257 }].map((p) => ({ ...p, type: 'public-key' })),
    });
    // Without user verification, or from another origin: refused, nothing kept.
    const noUv = await owner.call('POST', '/account/api/passkeys', {
      credential: new SoftwareAuthenticator(ISSUER).register(options, { userVerified: false }),
    });
    expect(noUv.statusCode).toBe(400);
    const options2 = (await owner.call('POST', '/account/api/passkeys/registration-options')).json();
    const made = await owner.call('POST', '/account/api/passkeys', { name: 'Laptop', credential: authenticator.register(options2) });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json()).toEqual({ id: expect.stringMatching(/^pk_/), name: 'Laptop', created_at: expect.any(String), last_used_at: null });
    // The options' challenge is spent: the same answer again is refused.
    expect((await owner.call('POST', '/account/api/passkeys', { credential: authenticator.register(options2) })).statusCode).toBe(400);
    expect((await owner.call('GET', '/account/api/me')).json().passkeys).toEqual([made.json()]);

    const signIn = await authenticatedSignIn(agent);
    const other = await authenticatedSignIn(agent);
    // An owner with a passkey must use it, even with a fresh email sign-in.
    const without = await decide(owner, signIn.requestId, { decision: 'approve' });
    expect(without.statusCode).toBe(403);
    expect(without.json().error).toBe('fresh_authentication_required');

    const optionsFor = async (requestId: string) => (await owner.call('POST', `/account/api/approvals/${requestId}/options`)).json();
    const refused = async (credential: unknown, requestId = signIn.requestId) => {
      const res = await decide(owner, requestId, { decision: 'approve', credential });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json().error).toBe('fresh_authentication_required');
    };
    const assertion = await optionsFor(signIn.requestId);
    expect(assertion).toMatchObject({
      rpId: 'localhost',
      userVerification: 'required',
      allowCredentials: [{ id: authenticator.id, type: 'public-key' }],
    });
    await refused(authenticator.assert(await optionsFor(signIn.requestId), { userVerified: false }));
    await refused(authenticator.assert(await optionsFor(signIn.requestId), { origin: 'https://evil.example' }));
    // A challenge bound to another sign-in: refused (and spent).
    const forOther = authenticator.assert(await optionsFor(other.requestId));
    await refused(forOther);
    await refused(forOther, other.requestId);
    // A challenge never issued.
    await refused(authenticator.assert({ challenge: 'bm90LWlzc3VlZA', rpId: 'localhost' }));
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({ status: 'authenticated', approval: 'pending' });

    const good = authenticator.assert(await optionsFor(signIn.requestId), { counter: 100 });
    const ok = await decide(owner, signIn.requestId, { decision: 'approve', credential: good });
    expect(ok.statusCode, ok.body).toBe(200);
    expect((await checkStatus(server, signIn.requestId)).json()).toEqual({ status: 'authenticated', approval: 'approved' });
    // Replayed on the other sign-in: its challenge was for this one, and is spent.
    await refused(good, other.requestId);
    // A signature counter that did not move on: a cloned authenticator.
    await refused(authenticator.assert(await optionsFor(other.requestId), { counter: 50 }), other.requestId);
    expect((await owner.call('GET', '/account/api/me')).json().passkeys[0].last_used_at).not.toBeNull();
    expect((await completeInBrowser(server, signIn.requestId, signIn.cookie)).code).toBeDefined();

    // Rename, then delete: the owner is back to fresh email sign-ins.
    const id = made.json().id;
    expect((await owner.call('PATCH', `/account/api/passkeys/${id}`, { name: 'Old laptop' })).json().name).toBe('Old laptop');
    expect((await owner.call('DELETE', `/account/api/passkeys/${id}`)).statusCode).toBe(204);
    expect((await owner.call('DELETE', `/account/api/passkeys/${id}`)).statusCode).toBe(404);
    expect((await decide(owner, other.requestId, { decision: 'approve' })).statusCode).toBe(200);
  });

  it('keeps several passkeys: either approves, and deleting one leaves the other working', async () => {
    const { agent, owner } = await ownerWithAgent('always');
    const register = async (name: string) => {
      const authenticator = new SoftwareAuthenticator(ISSUER);
      const options = (await owner.call('POST', '/account/api/passkeys/registration-options')).json();
      const made = await owner.call('POST', '/account/api/passkeys', { name, credential: authenticator.register(options) });
      expect(made.statusCode, made.body).toBe(201);
      // The options exclude what the owner holds already, so one authenticator is not registered twice.
      return { authenticator, id: made.json().id as string, excluded: (options.excludeCredentials ?? []).map((c: { id: string }) => c.id) };
    };
    const laptop = await register('Laptop');
    const phone = await register('Phone');
    expect(phone.excluded).toContain(laptop.authenticator.id);
    expect(
      (await owner.call('GET', '/account/api/me'))
        .json()
        .passkeys.map((p: { name: string }) => p.name)
        .sort(),
    ).toEqual(['Laptop', 'Phone']);

    /** Approves a new sign-in with `authenticator`; the options offer exactly the passkeys `held`. */
    const approveWith = async (authenticator: SoftwareAuthenticator, held = [laptop, phone]) => {
      const signIn = await authenticatedSignIn(agent);
      const options = (await owner.call('POST', `/account/api/approvals/${signIn.requestId}/options`)).json();
      expect(options.allowCredentials.map((c: { id: string }) => c.id).sort()).toEqual(held.map((k) => k.authenticator.id).sort());
      return decide(owner, signIn.requestId, { decision: 'approve', credential: authenticator.assert(options) });
    };
    expect((await approveWith(phone.authenticator)).statusCode).toBe(200);
    expect((await approveWith(laptop.authenticator)).statusCode).toBe(200);

    expect((await owner.call('DELETE', `/account/api/passkeys/${laptop.id}`)).statusCode).toBe(204);
    const gone = await approveWith(laptop.authenticator, [phone]);
    expect(gone.statusCode).toBe(403);
    expect(gone.json().error).toBe('fresh_authentication_required');
    expect((await approveWith(phone.authenticator, [phone])).statusCode).toBe(200);
  });

  it('signs an owner in with a discoverable passkey: a session; an unknown passkey or a spent challenge gets none', async () => {
    const { owner } = await ownerWithAgent('never');
    const authenticator = new SoftwareAuthenticator(ISSUER);
    const reg = (await owner.call('POST', '/account/api/passkeys/registration-options')).json();
    expect((await owner.call('POST', '/account/api/passkeys', { credential: authenticator.register(reg) })).statusCode).toBe(201);

    const json = { 'content-type': 'application/json', origin: ISSUER };
    const options = (await server.app.inject({ method: 'POST', url: '/account/passkey/options', headers: json, payload: '{}' })).json();
    expect(options).toMatchObject({ rpId: 'localhost', userVerification: 'required', allowCredentials: [] });
    const credential = authenticator.assert(options);
    const signedIn = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/sign-in',
      headers: json,
      payload: JSON.stringify({ credential }),
    });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    const cookie = signedIn.cookies.find((c) => c.name === 'agent_auth_owner');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    const me = await server.app.inject({ url: '/account/api/me', headers: { cookie: `agent_auth_owner=${cookie!.value}` } });
    expect(me.statusCode).toBe(200);

    const replay = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/sign-in',
      headers: json,
      payload: JSON.stringify({ credential }),
    });
    expect(replay.statusCode).toBe(401);
    expect(replay.json().error).toBe('login_required');
    expect(replay.cookies).toEqual([]);
    const options2 = (await server.app.inject({ method: 'POST', url: '/account/passkey/options', headers: json, payload: '{}' })).json();
    const unknown = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/sign-in',
      headers: json,
      payload: JSON.stringify({ credential: new SoftwareAuthenticator(ISSUER).assert(options2) }),
    });
    expect(unknown.statusCode).toBe(401);
    const malformed = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/sign-in',
      headers: json,
      payload: JSON.stringify({ credential: { id: 'x' } }),
    });
    expect(malformed.statusCode).toBe(400);
    const foreign = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/options',
      headers: { ...json, origin: 'https://evil.example' },
      payload: '{}',
    });
    expect(foreign.statusCode).toBe(403);
  });

  it('counts approvals requested, approved, denied by the owner and expired in /metrics on the admin listener', async () => {
    const scrape = async () => {
      const res = await server.admin.inject({ url: '/metrics' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('# TYPE agent_auth_owner_approvals_total counter');
      const count = (outcome: string) =>
        Number(new RegExp(`^agent_auth_owner_approvals_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(res.body)?.[1] ?? 0);
      return { requested: count('requested'), approved: count('approved'), denied: count('denied'), expired: count('expired') };
    };
    const purge = () => purgeExpired(server.services, { auditRetentionDays: 365, auditRetentionWithoutAgentDays: 365, log: server.app.log });
    // Earlier tests' overdue sign-ins are recorded first, so that only this test's count.
    await purge();
    const before = await scrape();
    const { agent, owner } = await ownerWithAgent('always');
    const approved = await authenticatedSignIn(agent);
    expect((await decide(owner, approved.requestId, { decision: 'approve' })).statusCode).toBe(200);
    const denied = await authenticatedSignIn(agent);
    expect((await decide(owner, denied.requestId, { decision: 'deny' })).statusCode).toBe(200);
    // Expired while waiting, noticed by a read; and one nobody looks at, recorded by the purge.
    const expired = await authenticatedSignIn(agent);
    await setRequestExpiry(server, expired.requestId, -1);
    expect((await checkStatus(server, expired.requestId)).json()).toMatchObject({ error: 'request_expired' });
    const purged = await authenticatedSignIn(agent);
    await setRequestExpiry(server, purged.requestId, -1);
    await purge();
    // An approved sign-in that expires later did not expire waiting: not counted.
    await setRequestExpiry(server, approved.requestId, -1);
    await checkStatus(server, approved.requestId);

    const after = await scrape();
    expect({
      requested: after.requested - before.requested,
      approved: after.approved - before.approved,
      denied: after.denied - before.denied,
      expired: after.expired - before.expired,
    }).toEqual({ requested: 4, approved: 1, denied: 1, expired: 2 });
  });

  it('works across instances: the sign-in waits on A, the owner approves on B, A’s long poll wakes and the code follows', async () => {
    const second = await startSecondInstance(server);
    try {
      const { agent, owner } = await ownerWithAgent('always');
      const signIn = await authenticatedSignIn(agent);
      const poll = server.app.inject({
        url: `/api/check-status?request_id=${signIn.requestId}&wait=20&last_status=authenticated&last_approval=pending`,
      });
      await new Promise((r) => setTimeout(r, 300));
      const started = Date.now();
      expect((await decide(owner, signIn.requestId, { decision: 'approve' }, second)).statusCode).toBe(200);
      expect((await poll).json()).toEqual({ status: 'authenticated', approval: 'approved' });
      expect(Date.now() - started).toBeLessThan(6000);
      expect((await completeInBrowser(server, signIn.requestId, signIn.cookie)).code).toBeDefined();
    } finally {
      await second.close();
    }
  });
});
