import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { Config } from '../config.js';
import { generateId, sha256 } from '../crypto/secrets.js';
import { LoginRequired, OAuthError } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import type { Mailer } from '../mail/mailer.js';
import { emailChangedMessage } from '../mail/messages.js';
import { newSessionSecret, SESSION_LIFETIMES } from '../owners/sessions.js';
import { type PasskeyDeps, refusedAs, verifyAssertion } from '../passkeys/webauthn.js';
import type { Store } from '../store/index.js';
import type { LinkRefusal } from '../store/owner-sessions.js';

/**
 * An owner signs in to /account (docs/protocol.md, "Owners"), by email link or with a passkey. Each
 * way has one shape: it proves who the owner is, then starts a session the one way the store has
 * (the session this browser held ends, the new one starts, the owner's history records it, in one
 * statement), and answers the new session's secret for the cookie. A refusal is an error of
 * src/errors.ts, thrown: the route renders it.
 */

export interface OwnerSignInDeps extends PasskeyDeps {
  config: Pick<Config, 'issuer' | 'brand' | 'owners'>;
  store: Pick<Store, 'emailLinks' | 'ownerSessions' | 'passkeys'>;
  mailer: Mailer;
  events: Events;
}

/** A session just started: the cookie's value. */
export interface StartedSession {
  sessionSecret: string;
}

const LINK_REFUSALS: Record<LinkRefusal, string> = {
  invalid_link: 'the sign-in link is spent, expired or unknown',
  no_account: 'no owner has this email address',
  email_taken: 'another account uses this email address now, so yours cannot move to it',
};

/** A link that is spent, expired or unknown, or that cannot be used (400): the page says so, and no cookie is set. */
export class InvalidLink extends OAuthError {
  constructor(error: LinkRefusal = 'invalid_link') {
    super(error, LINK_REFUSALS[error], 400);
  }
}

/** The session a sign-in starts, replacing the one this browser held (by its digest), if any. */
function newSession(replacing: string | undefined) {
  const session = newSessionSecret();
  return { secret: session.secret, start: { sessionHash: session.hash, lifetimes: SESSION_LIFETIMES, replacing } };
}

/** Opening a link spends nothing (mail scanners open links): InvalidLink unless it can still be used. */
export async function openEmailLink(deps: Pick<OwnerSignInDeps, 'store'>, token: string): Promise<void> {
  if (!(await deps.store.emailLinks.isUsable(sha256(token)))) throw new InvalidLink();
}

/**
 * Spends the link and starts an owner session (InvalidLink when it cannot). Using the link proves
 * the mailbox, so the owner's email is verified. A link to change the owner's address moves the
 * account there; the address it leaves is told, in case a thief did it.
 */
export async function signInByEmailLink(
  deps: OwnerSignInDeps,
  token: string,
  replacing: string | undefined,
  context: EventContext,
): Promise<StartedSession> {
  const session = newSession(replacing);
  const link = { tokenHash: sha256(token), signup: deps.config.owners.signup, newUserId: generateId('user') };
  const started = await deps.store.ownerSessions.startByEmailLink(link, session.start);
  if (typeof started === 'string') throw new InvalidLink(started);
  if (started.changed) {
    const { from, to } = started.changed;
    deps.mailer
      .send(emailChangedMessage({ to: from, brand: deps.config.brand.name, newEmail: to, link: `${deps.config.issuer}/account` }), context.log)
      .catch(() => {});
  }
  deps.events.emit('owner.signed_in', { user_id: started.user_id, method: 'email_link' }, context);
  return { sessionSecret: session.secret };
}

/**
 * Signs an owner in with a discoverable passkey (LoginRequired when it is refused): the assertion
 * names the credential, the credential its owner.
 */
export async function signInByPasskey(
  deps: OwnerSignInDeps,
  credential: AuthenticationResponseJSON,
  replacing: string | undefined,
  context: EventContext,
): Promise<StartedSession> {
  const { user_id } = await refusedAs(
    verifyAssertion(deps, 'sign_in', credential, () => true),
    LoginRequired,
  );
  const session = newSession(replacing);
  await deps.store.ownerSessions.start(user_id, { ...session.start, method: 'passkey' });
  deps.events.emit('owner.signed_in', { user_id, method: 'passkey' }, context);
  return { sessionSecret: session.secret };
}

/** Ends this session on every instance; `everywhere`: every session of the owner, on every device. */
export async function signOut(
  deps: Pick<OwnerSignInDeps, 'store' | 'events'>,
  session: { user_id: string; hash: string },
  everywhere: boolean,
  context: EventContext,
): Promise<void> {
  if (everywhere) await deps.store.ownerSessions.endAll(session.user_id);
  else await deps.store.ownerSessions.end(session.hash);
  deps.events.emit('owner.signed_out', { user_id: session.user_id, everywhere }, context);
}
