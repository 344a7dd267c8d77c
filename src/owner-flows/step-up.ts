import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { FreshAuthenticationRequired, InvalidRequest } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import { assertionOptions, type PasskeyDeps, refusedAs, verifyAssertion } from '../passkeys/webauthn.js';
import type { Store } from '../store/index.js';
import type { IssuedChallenge, StoredCredential } from '../store/passkeys.js';

/**
 * The step-up (docs/protocol.md, "Fresh verification"): the owner confirms with a passkey that it is
 * them, and the session is fresh again (src/owners/protection.ts, isFresh) for the changes that
 * weaken their protection.
 */

export interface StepUpDeps extends PasskeyDeps {
  store: Pick<Store, 'passkeys' | 'ownerSessions'>;
  events: Events;
}

/** The session a step-up makes fresh: its owner and the digest that keys it. */
export interface SteppingUp {
  user_id: string;
  hash: string;
}

/**
 * Request options: the owner's passkeys offered, the challenge bound to this session and spent by its
 * one check. An owner without a passkey is told that a sign-in link is the way (400).
 */
export async function stepUpOptions(deps: StepUpDeps, session: SteppingUp) {
  if ((await deps.store.passkeys.count(session.user_id)) === 0) {
    throw new InvalidRequest('you have no passkey: sign in again with a link from your email to confirm that it is you');
  }
  return assertionOptions(deps, 'reauthentication', { user_id: session.user_id, session_hash: session.hash });
}

/**
 * A user-verified assertion of one of the owner's passkeys over this session's challenge makes the
 * session fresh (FreshAuthenticationRequired otherwise). An assertion made for another session,
 * another owner, a sign-in or an approval is refused: each purpose and session has challenges of its own.
 */
export async function stepUp(deps: StepUpDeps, session: SteppingUp, credential: AuthenticationResponseJSON, context: EventContext): Promise<void> {
  const mine = (issued: IssuedChallenge, passkey: StoredCredential) =>
    issued.session_hash === session.hash && issued.user_id === session.user_id && passkey.user_id === session.user_id;
  await refusedAs(verifyAssertion(deps, 'reauthentication', credential, mine), FreshAuthenticationRequired);
  await deps.store.ownerSessions.reverify(session.hash, 'passkey');
  deps.events.emit('owner.stepped_up', { user_id: session.user_id }, context);
}
