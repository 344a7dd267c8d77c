import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, start } from '../../src/agent-sign-in/sign-in.js';
import { randomToken, sha256 } from '../../src/crypto/secrets.js';
import type { EventName } from '../../src/events/catalogue.js';
import type { EventContext } from '../../src/events/emitter.js';
import { approvalOptions, approve, deny } from '../../src/owner-flows/approval.js';
import { addPasskey, changeSettings, ownerView, removePasskey, renamePasskey } from '../../src/owner-flows/settings.js';
import { openEmailLink, signInByEmailLink, signInByPasskey, signOut } from '../../src/owner-flows/sign-in.js';
import { stepUp, stepUpOptions } from '../../src/owner-flows/step-up.js';
import { currentOwner } from '../../src/owners/sessions.js';
import { assertionOptions, registrationOptions } from '../../src/passkeys/webauthn.js';
import type { Services } from '../../src/services.js';
import { storeName } from '../helpers/database.js';
import { newSignIn, openTestServices } from '../helpers/services.js';
import { SoftwareAuthenticator } from '../helpers/webauthn.js';

const ISSUER = 'https://auth.example';
const context: EventContext = { log: pino({ level: 'silent' }) };

/** The error a flow throws, as `{error, status}`. */
async function refusal(call: Promise<unknown>) {
  try {
    await call;
  } catch (err) {
    const { error, statusCode } = err as { error: string; statusCode: number };
    return { error, status: statusCode };
  }
  throw new Error('the flow did not refuse');
}

/**
 * The person's flows called directly, without HTTP (src/owner-flows): signing in by link and by
 * passkey, the step-up, settings and passkeys, approval. The same store the server runs on; the
 * portal's HTTP tests (test/account, test/approvals) drive the same flows through the routes.
 */
describe(`the owner's flows without HTTP (${storeName})`, () => {
  let services: Services;
  let close: () => Promise<void>;
  const emitted: EventName[] = [];

  beforeAll(async () => {
    ({ services, close } = await openTestServices({ ISSUER, OWNER_SIGNUP: 'true', OWNER_FRESH_SECONDS: '300' }));
    for (const name of ['sign-in.approved', 'sign-in.denied'] as const) services.events.on(name, () => void emitted.push(name));
  });
  afterAll(() => close());

  /** A link as the mail would carry it (the mail itself is src/owners/email-link.ts's). */
  async function mailedLink(email: string, changeFor?: string) {
    const token = randomToken(32);
    await services.store.emailLinks.record({ tokenHash: sha256(token), email, ttlSeconds: 900, max: 100, windowSeconds: 3600, changeFor });
    return token;
  }
  const sessionOf = async (secret: string) => (await currentOwner(services, secret))!;
  const history = async (userId: string) => (await services.store.auditLog.ofOwner(userId, { limit: 50 })).map((row) => row.event);
  /** Backdates a session's last verification, so that it is no longer fresh. */
  const stale = (hash: string) =>
    services.db.query(`UPDATE owner_sessions SET authenticated_at = now() - interval '1 hour' WHERE session_hash = $1`, [hash]);

  async function signedIn(email: string) {
    const { sessionSecret } = await signInByEmailLink(services, await mailedLink(email), undefined, context);
    return { ...(await sessionOf(sessionSecret)), secret: sessionSecret };
  }

  it('by email link: opening spends nothing, using starts a session, verifies the address and records it; a link works once', async () => {
    const token = await mailedLink('link@example.com');
    await openEmailLink(services, token);
    await openEmailLink(services, token);
    const first = await signInByEmailLink(services, token, undefined, context);
    const session = await sessionOf(first.sessionSecret);
    expect(session).toMatchObject({ email: 'link@example.com', authenticated_by: 'email_link' });
    expect((await ownerView(services, session.user_id)).email_verified).toBe(true);
    expect(await history(session.user_id)).toEqual(['owner_signed_in']);
    expect(await refusal(signInByEmailLink(services, token, undefined, context))).toEqual({ error: 'invalid_link', status: 400 });
    expect(await refusal(openEmailLink(services, token))).toEqual({ error: 'invalid_link', status: 400 });
  });

  it('a new sign-in ends the session this browser held; signing out ends one, or all', async () => {
    const before = await signedIn('switch@example.com');
    const again = await signInByEmailLink(services, await mailedLink('switch@example.com'), before.hash, context);
    expect(await currentOwner(services, before.secret)).toBeUndefined();
    const now = await sessionOf(again.sessionSecret);
    const other = await signedIn('switch@example.com');
    await signOut(services, now, false, context);
    expect(await currentOwner(services, again.sessionSecret)).toBeUndefined();
    expect(await currentOwner(services, other.secret)).toBeDefined();
    const third = await signedIn('switch@example.com');
    await signOut(services, third, true, context);
    expect(await currentOwner(services, other.secret)).toBeUndefined();
  });

  it('emits each of the owner’s facts once, with who, for the log lines and counters that subscribe', async () => {
    const facts: [string, unknown][] = [];
    for (const name of ['owner.signed_in', 'owner.settings_changed', 'owner.signed_out'] as const) {
      services.events.on(name, (event) => void facts.push([name, event]));
    }
    const owner = await signedIn('facts@example.com');
    await changeSettings(services, owner.user_id, { notify_new_website: false }, context);
    await signOut(services, owner, false, context);
    expect(facts).toEqual([
      ['owner.signed_in', { user_id: owner.user_id, method: 'email_link' }],
      ['owner.settings_changed', { user_id: owner.user_id, fields: ['notify_new_website'] }],
      ['owner.signed_out', { user_id: owner.user_id, everywhere: false }],
    ]);
  });

  it('a link to change the address moves the account, or says the address is taken', async () => {
    const owner = await signedIn('old@example.com');
    await signedIn('taken@example.com');
    const moved = await signInByEmailLink(services, await mailedLink('new@example.com', owner.user_id), undefined, context);
    expect((await sessionOf(moved.sessionSecret)).email).toBe('new@example.com');
    expect(await history(owner.user_id)).toEqual(['owner_email_changed', 'owner_signed_in', 'owner_signed_in']);
    const taken = signInByEmailLink(services, await mailedLink('taken@example.com', owner.user_id), undefined, context);
    expect(await refusal(taken)).toEqual({ error: 'email_taken', status: 400 });
  });

  it('settings and passkeys: each change is written and in the history; another owner’s passkey is not found', async () => {
    const owner = await signedIn('keys@example.com');
    const view = await changeSettings(services, owner.user_id, { approval_policy: 'always' }, context);
    expect(view).toMatchObject({ approval_policy: 'always', notify_new_website: true, passkeys: [] });
    const authenticator = new SoftwareAuthenticator(ISSUER);
    const made = authenticator.register(await registrationOptions(services, owner));
    const passkey = await addPasskey(services, owner.user_id, made, 'Laptop', context);
    const replayed = authenticator.register(await registrationOptions(services, owner), { challenge: 'AAAA' });
    expect(await refusal(addPasskey(services, owner.user_id, replayed, 'Again', context))).toEqual({ error: 'invalid_request', status: 400 });
    expect(await renamePasskey(services, owner.user_id, passkey.id, 'Work laptop')).toMatchObject({ name: 'Work laptop' });
    const stranger = await signedIn('stranger@example.com');
    expect(await refusal(renamePasskey(services, stranger.user_id, passkey.id, 'Mine'))).toEqual({ error: 'not_found', status: 404 });
    expect(await refusal(removePasskey(services, stranger.user_id, passkey.id, context))).toEqual({ error: 'not_found', status: 404 });
    expect(await removePasskey(services, owner.user_id, passkey.id, context)).toBe('Work laptop');
    expect(await history(owner.user_id)).toEqual([
      'passkey_removed',
      'passkey_renamed',
      'passkey_added',
      'owner_settings_changed',
      'owner_signed_in',
    ]);
  });

  it('by passkey, and the step-up: a session, made fresh again; refusals are login_required and fresh_authentication_required', async () => {
    const owner = await signedIn('passkey@example.com');
    expect(await refusal(stepUpOptions(services, owner))).toEqual({ error: 'invalid_request', status: 400 });
    const authenticator = new SoftwareAuthenticator(ISSUER);
    await addPasskey(services, owner.user_id, authenticator.register(await registrationOptions(services, owner)), 'Phone', context);

    const signIn = authenticator.assert(await assertionOptions(services, 'sign_in'));
    const started = await signInByPasskey(services, signIn, owner.hash, context);
    const session = await sessionOf(started.sessionSecret);
    expect(session).toMatchObject({ user_id: owner.user_id, authenticated_by: 'passkey' });
    expect(await currentOwner(services, owner.secret)).toBeUndefined();
    expect(await refusal(signInByPasskey(services, signIn, undefined, context))).toEqual({ error: 'login_required', status: 401 });

    await stale(session.hash);
    const confirmed = authenticator.assert(await stepUpOptions(services, session));
    await stepUp(services, session, confirmed, context);
    expect(Date.now() - (await sessionOf(started.sessionSecret)).authenticated_at.getTime()).toBeLessThan(60_000);
    expect(await refusal(stepUp(services, session, confirmed, context))).toEqual({ error: 'fresh_authentication_required', status: 403 });
    expect((await history(owner.user_id)).slice(0, 2)).toEqual(['owner_reauthenticated', 'owner_signed_in']);
  });

  describe('approval of an agent’s sign-in', () => {
    let client: { client_id: string; redirect_uris: string[] };

    beforeAll(async () => {
      client = await services.store.clients.create({ name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    });

    /** A sign-in of a new agent of `email`'s, authenticated and waiting for its owner. */
    async function waiting(email: string) {
      const agent = await services.store.agents.create({ email, name: 'Agent' });
      const signIn = await start(services, newSignIn(client, { scope: 'openid' }), context);
      const proof = { requestId: signIn.id, agentId: agent.agent_id, credential: { secret: agent.agent_secret }, model: 'm' };
      expect(await authenticate(services, proof, context)).toMatchObject({ approval: 'pending' });
      return signIn.id;
    }

    it('without a passkey: a fresh session approves, once; a stale one may not; another owner finds nothing', async () => {
      const owner = await signedIn('approver@example.com');
      await changeSettings(services, owner.user_id, { approval_policy: 'always' }, context);
      const requestId = await waiting('approver@example.com');
      const stranger = await signedIn('other-owner@example.com');
      expect(await refusal(approve(services, requestId, stranger, undefined, context))).toEqual({ error: 'not_found', status: 404 });
      await stale(owner.hash);
      const staleOwner = await sessionOf(owner.secret);
      expect(await refusal(approve(services, requestId, staleOwner, undefined, context))).toEqual({
        error: 'fresh_authentication_required',
        status: 403,
      });
      emitted.length = 0;
      const fresh = await signedIn('approver@example.com');
      await approve(services, requestId, fresh, undefined, context);
      await approve(services, requestId, fresh, undefined, context);
      expect(emitted).toEqual(['sign-in.approved']);
      expect(await refusal(deny(services, requestId, fresh, context))).toEqual({ error: 'invalid_request', status: 400 });
    });

    it('deny ends the sign-in, once; then it can no longer be approved', async () => {
      const owner = await signedIn('denier@example.com');
      await changeSettings(services, owner.user_id, { approval_policy: 'always' }, context);
      const requestId = await waiting('denier@example.com');
      emitted.length = 0;
      await deny(services, requestId, owner, context);
      await deny(services, requestId, owner, context);
      expect(emitted).toEqual(['sign-in.denied']);
      expect(await refusal(approve(services, requestId, owner, undefined, context))).toEqual({ error: 'invalid_request', status: 400 });
      expect(await refusal(approvalOptions(services, requestId, owner.user_id))).toEqual({ error: 'invalid_request', status: 400 });
    });

    it('with a passkey: only an assertion over this sign-in’s challenge approves', async () => {
      const owner = await signedIn('passkey-approver@example.com');
      await changeSettings(services, owner.user_id, { approval_policy: 'always' }, context);
      const authenticator = new SoftwareAuthenticator(ISSUER);
      await addPasskey(services, owner.user_id, authenticator.register(await registrationOptions(services, owner)), 'Key', context);
      const requestId = await waiting('passkey-approver@example.com');
      expect(await refusal(approve(services, requestId, owner, undefined, context))).toEqual({ error: 'fresh_authentication_required', status: 403 });
      const elsewhere = authenticator.assert(await assertionOptions(services, 'sign_in'));
      expect(await refusal(approve(services, requestId, owner, elsewhere, context))).toEqual({ error: 'fresh_authentication_required', status: 403 });
      emitted.length = 0;
      await approve(services, requestId, owner, authenticator.assert(await approvalOptions(services, requestId, owner.user_id)), context);
      expect(emitted).toEqual(['sign-in.approved']);
    });
  });
});
