import { generateKeyPairSync } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, startAuthorize } from '../helpers/flow.js';
import { cookiesOf, serverWithMail, signInOwner } from '../helpers/owner.js';
import { ISSUER, type TestServer } from '../helpers/server.js';
import type { TestSmtp } from '../helpers/smtp.js';
import { SoftwareAuthenticator } from '../helpers/webauthn.js';

type Owner = Awaited<ReturnType<typeof signInOwner>>;
const BROWSER = 'Mozilla/5.0 (stolen cookie) Test/1.0';

/**
 * A stolen owner session cannot lower the owner's guard (docs/security.md, third red team): every
 * change that weakens it needs a fresh session (OWNER_FRESH_SECONDS), which a passkey assertion over
 * a challenge bound to the session, or a new email-link sign-in, gives; each such change is mailed,
 * audited and in the owner's history. Raising protection stays one call.
 */
describe(`step-up for changes that weaken an owner's protection (${storeName})`, () => {
  const started = serverWithMail({ RATE_LIMIT_EMAIL_LINK_PER_EMAIL: '1000' });
  let smtp: TestSmtp;
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  beforeAll(async () => {
    ({ smtp, server } = started);
    client = await server.createClient();
  });

  const newEmail = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;
  /** The owner's sessions' last verification, moved `seconds` into the past. */
  const age = (email: string, seconds: number) =>
    server.services.db.query(
      `UPDATE owner_sessions SET authenticated_at = now() - make_interval(secs => $2) WHERE user_id = (SELECT id FROM users WHERE email = $1)`,
      [email, seconds],
    );
  /** What the owner's browser (or a thief of its cookie) sends, with a User-Agent the mail must name. */
  const call = (owner: Owner, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    server.app.inject({
      method,
      url,
      headers: { cookie: owner.cookie, 'user-agent': BROWSER, ...(method === 'GET' ? {} : { 'content-type': 'application/json', origin: ISSUER }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });
  async function addPasskey(owner: Owner, authenticator: SoftwareAuthenticator, name: string) {
    const options = (await call(owner, 'POST', '/account/api/passkeys/registration-options')).json();
    const made = await call(owner, 'POST', '/account/api/passkeys', { name, credential: authenticator.register(options) });
    expect(made.statusCode, made.body).toBe(201);
    return made.json().id as string;
  }
  async function stepUp(owner: Owner, authenticator: SoftwareAuthenticator) {
    const options = await call(owner, 'POST', '/account/api/reauthenticate/options');
    expect(options.statusCode, options.body).toBe(200);
    return call(owner, 'POST', '/account/api/reauthenticate', { credential: authenticator.assert(options.json()) });
  }
  /** An owner (policy `always`) with an agent and a passkey, whose session has gone stale. */
  async function staleOwnerWithPasskey() {
    const email = newEmail();
    const agent = await server.createAgent(email);
    const owner = await signInOwner(server.app, smtp, email);
    expect((await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'always' })).statusCode).toBe(200);
    const authenticator = new SoftwareAuthenticator(ISSUER);
    const passkeyId = await addPasskey(owner, authenticator, 'Real laptop');
    await smtp.next(email, 5000, (m) => m.text.includes('“Real laptop” was added'));
    await age(email, 301);
    return { email, agent, owner, authenticator, passkeyId };
  }
  const jwk = () => generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
  const expectFreshRequired = (res: { statusCode: number; json(): { error: string } }) => {
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toBe('fresh_authentication_required');
  };

  it('with a stale session: each attack of the red team (and a body not valid at all) is refused 403, and nothing changes', async () => {
    const { email, agent, owner, passkeyId } = await staleOwnerWithPasskey();
    const attacker = new SoftwareAuthenticator(ISSUER);
    // Registering a passkey of the attacker's: neither the options nor the registration.
    expectFreshRequired(await call(owner, 'POST', '/account/api/passkeys/registration-options'));
    expectFreshRequired(
      await call(owner, 'POST', '/account/api/passkeys', {
        credential: attacker.register({ challenge: 'x', rp: { id: 'localhost' }, user: { id: 'x' } }),
      }),
    );
    // Checked before the body: a stale session learns nothing from a 400.
    expectFreshRequired(await call(owner, 'POST', '/account/api/passkeys', { nonsense: true }));
    expectFreshRequired(await call(owner, 'DELETE', `/account/api/passkeys/${passkeyId}`));
    expectFreshRequired(await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'never' }));
    expectFreshRequired(await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'new_website' }));
    expectFreshRequired(await call(owner, 'PATCH', '/account/api/me', { notify_new_website: false }));
    expectFreshRequired(await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'bogus' }));
    expectFreshRequired(await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: 'never' }));
    expectFreshRequired(await call(owner, 'POST', `/account/api/agents/${agent.agent_id}/keys`, { jwk: jwk() }));

    const me = (await call(owner, 'GET', '/account/api/me')).json();
    expect(me).toMatchObject({ approval_policy: 'always', notify_new_website: true });
    expect(me.passkeys.map((p: { id: string }) => p.id)).toEqual([passkeyId]);
    expect((await call(owner, 'GET', `/account/api/agents/${agent.agent_id}/keys`)).json().keys).toEqual([]);
    // The agent's sign-in still waits for the owner.
    const { requestId } = await startAuthorize(server, client);
    expect(
      (await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).json().approval,
    ).toBe('pending');
    // Nothing was mailed as changed.
    await new Promise((r) => setTimeout(r, 200));
    const changes = smtp.received.filter((m) => m.to === email && m.subject.includes('lowered its protection')).map((m) => m.text);
    expect(changes).toEqual([expect.stringContaining('the passkey “Real laptop” was added')]);
  });

  it('raising protection needs no freshness: a stricter policy, an equal one, a rename, revoking, the kill switch, signing out', async () => {
    const { email, agent, owner, passkeyId } = await staleOwnerWithPasskey();
    expect((await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: 'always' })).statusCode).toBe(200);
    expect((await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: null })).statusCode).toBe(200);
    expect((await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { name: 'Renamed' })).statusCode).toBe(200);
    expect((await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { active: false })).statusCode).toBe(200);
    expect((await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'always', notify_new_website: true })).statusCode).toBe(200);
    expect((await call(owner, 'PATCH', `/account/api/passkeys/${passkeyId}`, { name: 'Work laptop' })).statusCode).toBe(200);
    expect((await call(owner, 'DELETE', `/account/api/agents/${agent.agent_id}/websites/${client.client_id}`)).statusCode).toBe(204);
    expect((await call(owner, 'POST', '/account/api/revoke-all')).statusCode).toBe(204);
    // An agent whose own policy is stricter than the owner's may go back to the owner's... only fresh.
    await server.services.db.query(`UPDATE users SET approval_policy = 'new_website' WHERE email = $1`, [email]);
    expect((await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: 'always' })).statusCode).toBe(200);
    expectFreshRequired(await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: null }));
    expect((await call(owner, 'POST', '/account/sign-out', { everywhere: true })).statusCode).toBe(204);
  });

  it('after a step-up with the passkey each change is allowed, mailed (what, when, address, browser), audited and in the history; stale again later', async () => {
    const { email, agent, owner, authenticator, passkeyId } = await staleOwnerWithPasskey();
    const stepped = await stepUp(owner, authenticator);
    expect(stepped.statusCode, stepped.body).toBe(204);

    const lowered = await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'never', notify_new_website: false });
    expect(lowered.statusCode).toBe(200);
    const mail = await smtp.next(email, 5000, (m) => m.subject.includes('lowered its protection'));
    expect(mail.text).toContain('lowered from “Ask me every time” to “Never ask me”');
    expect(mail.text).toContain('turned off');
    expect(mail.text).toContain('127.0.0.1');
    expect(mail.text).toContain(BROWSER);
    expect(mail.text).toMatch(/When: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);

    expect((await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'always' })).statusCode).toBe(200);
    expect((await call(owner, 'PATCH', `/account/api/agents/${agent.agent_id}`, { approval_policy: 'new_website' })).statusCode).toBe(200);
    expect((await smtp.next(email, 5000, (m) => m.subject.includes('lowered its protection'))).text).toContain(
      'your agent “Test agent” was lowered from “Ask me every time” to “Ask me for new websites”',
    );
    expect((await call(owner, 'POST', `/account/api/agents/${agent.agent_id}/keys`, { jwk: jwk() })).statusCode).toBe(201);
    expect((await smtp.next(email, 5000, (m) => m.subject.includes('lowered its protection'))).text).toContain('the agent signs its assertions with');
    const second = new SoftwareAuthenticator(ISSUER);
    await addPasskey(owner, second, 'Phone');
    expect((await smtp.next(email, 5000, (m) => m.subject.includes('lowered its protection'))).text).toContain('the passkey “Phone” was added');
    expect((await call(owner, 'DELETE', `/account/api/passkeys/${passkeyId}`)).statusCode).toBe(204);
    expect((await smtp.next(email, 5000, (m) => m.subject.includes('lowered its protection'))).text).toContain(
      'the passkey “Real laptop” was removed',
    );

    // Audited as the owner's, for the operators...
    const audit = (await server.adminCall('GET', `/admin/audit?email=${encodeURIComponent(email)}&actor=owner`)).json.events.map(
      (e: { event: string }) => e.event,
    );
    for (const event of ['owner_reauthenticated', 'owner_settings_changed', 'agent_updated', 'agent_key_added', 'passkey_added', 'passkey_removed']) {
      expect(audit).toContain(event);
    }
    // ...and in the owner's history.
    const history = (await call(owner, 'GET', '/account/api/history?limit=50')).json().events;
    const events = history.map((e: { event: string }) => e.event);
    for (const event of ['owner_reauthenticated', 'passkey_added', 'passkey_removed', 'owner_settings_changed', 'agent_key_added']) {
      expect(events).toContain(event);
    }
    expect(history.find((e: { event: string }) => e.event === 'passkey_removed')).toMatchObject({ actor: 'owner', detail: { name: 'Real laptop' } });

    // OWNER_FRESH_SECONDS later the session is stale again.
    await age(email, 301);
    expectFreshRequired(await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'never' }));
  });

  it('a step-up takes a user-verified assertion of the owner’s own passkey over this session’s challenge, once', async () => {
    const { email, owner, authenticator } = await staleOwnerWithPasskey();
    // Without user verification; then over a challenge issued to another session of the same owner.
    const options = (await call(owner, 'POST', '/account/api/reauthenticate/options')).json();
    expect(options).toMatchObject({
      rpId: 'localhost',
      userVerification: 'required',
      allowCredentials: [{ id: authenticator.id, type: 'public-key' }],
    });
    expectFreshRequired(
      await call(owner, 'POST', '/account/api/reauthenticate', { credential: authenticator.assert(options, { userVerified: false }) }),
    );
    const otherSession = await signInOwner(server.app, smtp, email);
    await age(email, 301);
    const foreign = (await call(otherSession, 'POST', '/account/api/reauthenticate/options')).json();
    expectFreshRequired(await call(owner, 'POST', '/account/api/reauthenticate', { credential: authenticator.assert(foreign) }));
    // Another owner's passkey over this session's challenge.
    const stranger = await staleOwnerWithPasskey();
    const mine = (await call(owner, 'POST', '/account/api/reauthenticate/options')).json();
    expectFreshRequired(await call(owner, 'POST', '/account/api/reauthenticate', { credential: stranger.authenticator.assert(mine) }));
    expectFreshRequired(await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'never' }));
    // A good one, then the same again (spent challenge).
    const good = (await call(owner, 'POST', '/account/api/reauthenticate/options')).json();
    const assertion = authenticator.assert(good);
    expect((await call(owner, 'POST', '/account/api/reauthenticate', { credential: assertion })).statusCode).toBe(204);
    expectFreshRequired(await call(owner, 'POST', '/account/api/reauthenticate', { credential: assertion }));
    expect((await call(owner, 'PATCH', '/account/api/me', { approval_policy: 'never' })).statusCode).toBe(200);
    // The other session is no fresher for it.
    expectFreshRequired(await call(otherSession, 'PATCH', '/account/api/me', { notify_new_website: false }));
    // Without a session: 401.
    expect(
      (
        await server.app.inject({
          method: 'POST',
          url: '/account/api/reauthenticate/options',
          headers: { 'content-type': 'application/json', origin: ISSUER },
        })
      ).statusCode,
    ).toBe(401);
  });

  it('an owner without a passkey: stale needs a new email link (no step-up), which then registers the first passkey', async () => {
    const email = newEmail();
    await server.createAgent(email);
    const owner = await signInOwner(server.app, smtp, email);
    await age(email, 301);
    const options = await call(owner, 'POST', '/account/api/reauthenticate/options');
    expect(options.statusCode).toBe(400);
    expect(options.json().error_description).toContain('link from your email');
    expectFreshRequired(await call(owner, 'POST', '/account/api/passkeys/registration-options'));
    const relinked = await signInOwner(server.app, smtp, email);
    await addPasskey(relinked, new SoftwareAuthenticator(ISSUER), 'First');
    expect((await smtp.next(email, 5000, (m) => m.subject.includes('lowered its protection'))).text).toContain('the passkey “First” was added');
  });

  it('the red team’s first attack, replayed: a stale session cannot register a passkey that approves a waiting sign-in', async () => {
    const { agent, owner } = await staleOwnerWithPasskey();
    const { requestId } = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expectFreshRequired(await call(owner, 'POST', '/account/api/passkeys/registration-options'));
    // Nor can it approve without the real passkey.
    expectFreshRequired(await call(owner, 'POST', `/account/api/approvals/${requestId}`, { decision: 'approve' }));
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'authenticated', approval: 'pending' });
  });

  it('a passkey sign-in is in the owner’s history, as an email-link sign-in is', async () => {
    const { owner, authenticator } = await staleOwnerWithPasskey();
    const options = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/options',
      headers: { 'content-type': 'application/json', origin: ISSUER },
      payload: '{}',
    });
    const signedIn = await server.app.inject({
      method: 'POST',
      url: '/account/passkey/sign-in',
      headers: { 'content-type': 'application/json', origin: ISSUER },
      payload: JSON.stringify({ credential: authenticator.assert(options.json()) }),
    });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    const viaPasskey = { ...owner, cookie: cookiesOf(signedIn) };
    const history = (await call(viaPasskey, 'GET', '/account/api/history')).json().events;
    expect(history[0]).toMatchObject({ event: 'owner_signed_in', actor: 'owner', detail: { by: 'passkey' } });
    // A passkey sign-in is fresh.
    expect((await call(viaPasskey, 'PATCH', '/account/api/me', { approval_policy: 'new_website' })).statusCode).toBe(200);
  });
});
