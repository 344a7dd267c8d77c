import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { newSessionSecret, SESSION_LIFETIMES } from '../owners/sessions.js';
import type { Store } from '../store/index.js';
import { type PasskeyDeps, verifyAssertion } from './webauthn.js';

export interface PasskeySignInDeps extends PasskeyDeps {
  store: Pick<Store, 'passkeys' | 'ownerSessions'>;
}

/**
 * Signs an owner in with a discoverable passkey: the assertion names the credential, the
 * credential its owner. A new session is minted every time (src/owners/sessions.ts); returns the
 * cookie's secret.
 */
export async function signInWithPasskey(deps: PasskeySignInDeps, credential: AuthenticationResponseJSON): Promise<{ sessionSecret: string }> {
  const { user_id } = await verifyAssertion(deps, 'sign_in', credential, () => true);
  const session = newSessionSecret();
  await deps.store.ownerSessions.start({ sessionHash: session.hash, userId: user_id, method: 'passkey', lifetimes: SESSION_LIFETIMES });
  return { sessionSecret: session.secret };
}
