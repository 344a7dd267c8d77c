import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { InvalidRequest } from '../errors.js';
import { newSessionSecret, SESSION_LIFETIMES } from '../owners/sessions.js';
import type { Store } from '../store/index.js';
import { assertionOptions, type PasskeyDeps, verifyAssertion } from './webauthn.js';

export interface PasskeySignInDeps extends PasskeyDeps {
  store: Pick<Store, 'passkeys' | 'ownerSessions' | 'auditLog'>;
}

/**
 * Signs an owner in with a discoverable passkey: the assertion names the credential, the
 * credential its owner. A new session is minted every time (src/owners/sessions.ts); returns the
 * cookie's secret. The owner's history lists it, as it lists email-link sign-ins.
 */
export async function signInWithPasskey(deps: PasskeySignInDeps, credential: AuthenticationResponseJSON): Promise<{ sessionSecret: string }> {
  const { user_id } = await verifyAssertion(deps, 'sign_in', credential, () => true);
  const session = newSessionSecret();
  await deps.store.ownerSessions.start({ sessionHash: session.hash, userId: user_id, method: 'passkey', lifetimes: SESSION_LIFETIMES });
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'owner_signed_in', userId: user_id, detail: { by: 'passkey' } });
  return { sessionSecret: session.secret };
}

/** The session a step-up makes fresh: its owner and the digest that keys it. */
export interface SteppingUp {
  user_id: string;
  hash: string;
}

/**
 * Request options for a step-up (docs/protocol.md, "Fresh verification"): the owner's passkeys offered,
 * the challenge bound to this session and spent by its one check. An owner without a passkey is told
 * that a sign-in link is the way (400).
 */
export async function reauthenticationOptions(deps: PasskeySignInDeps, session: SteppingUp) {
  if ((await deps.store.passkeys.count(session.user_id)) === 0) {
    throw new InvalidRequest('you have no passkey: sign in again with a link from your email to confirm that it is you');
  }
  return assertionOptions(deps, 'reauthentication', { user_id: session.user_id, session_hash: session.hash });
}

/**
 * A step-up: a user-verified assertion of one of the owner's passkeys over this session's challenge
 * makes the session fresh (PasskeyRefused otherwise). An assertion made for another session, another
 * owner, a sign-in or an approval is refused: each purpose and session has challenges of its own.
 */
export async function reauthenticate(deps: PasskeySignInDeps, session: SteppingUp, credential: AuthenticationResponseJSON): Promise<void> {
  await verifyAssertion(
    deps,
    'reauthentication',
    credential,
    (issued, passkey) => issued.session_hash === session.hash && issued.user_id === session.user_id && passkey.user_id === session.user_id,
  );
  await deps.store.ownerSessions.reverify(session.hash, 'passkey');
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'owner_reauthenticated', userId: session.user_id, detail: { by: 'passkey' } });
}
