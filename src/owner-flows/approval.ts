import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { Config } from '../config.js';
import { FreshAuthenticationRequired, InvalidRequest, NotFound, RequestExpired } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import { assertFresh } from '../owners/protection.js';
import { assertionOptions, type PasskeyDeps, PasskeyRefused, verifyAssertion } from '../passkeys/webauthn.js';
import type { Store } from '../store/index.js';

/**
 * The owner's decision on a sign-in one of their agents is waiting on (docs/protocol.md, owner
 * approval). Approving needs fresh proof that the owner is there, which nothing the agent holds
 * can give: a passkey assertion with user verification over a challenge bound to this sign-in, or,
 * for an owner with no passkey, a fresh session (src/owners/protection.ts). Denying needs only
 * the owner's session. Everything is in the store, so any instance may decide.
 */

export interface ApprovalDeps extends PasskeyDeps {
  config: Pick<Config, 'issuer' | 'brand' | 'owners'>;
  store: Pick<Store, 'approvals' | 'passkeys'>;
  events: Events;
}

/** The owner deciding, as their session knows them. */
export interface Decider {
  user_id: string;
  authenticated_at: Date;
}

const notFound = () => new NotFound('no such sign-in is waiting for you');

/** The sign-in, if it is one of this owner's agents' and can still be decided on. */
async function decidable(deps: ApprovalDeps, requestId: string, userId: string) {
  const signIn = await deps.store.approvals.owned(requestId, userId);
  if (!signIn) throw notFound();
  if (signIn.expired) throw new RequestExpired();
  return signIn;
}

/** Request options whose challenge is bound to this sign-in and this owner. */
export async function approvalOptions(deps: ApprovalDeps, requestId: string, userId: string) {
  const signIn = await decidable(deps, requestId, userId);
  if (signIn.approval !== 'pending' || signIn.status !== 'authenticated') throw new InvalidRequest('this sign-in is not waiting for approval');
  return assertionOptions(deps, 'approval', { user_id: userId, request_id: requestId });
}

/** Proof that the owner is there now: their passkey over this sign-in's challenge, or (without one) a fresh session. */
async function freshlyVerified(
  deps: ApprovalDeps,
  requestId: string,
  owner: Decider,
  passkeys: number,
  credential: AuthenticationResponseJSON | undefined,
) {
  if (passkeys === 0) return assertFresh(deps.config, owner, 'approving without a passkey');
  if (!credential) throw new FreshAuthenticationRequired("approve with your passkey: send an assertion over this sign-in's challenge");
  try {
    await verifyAssertion(
      deps,
      'approval',
      credential,
      (issued, passkey) => issued.request_id === requestId && issued.user_id === owner.user_id && passkey.user_id === owner.user_id,
    );
  } catch (error) {
    if (error instanceof PasskeyRefused) throw new FreshAuthenticationRequired(error.message);
    throw error;
  }
}

/** pending -> approved; approving again is harmless. */
export async function approve(
  deps: ApprovalDeps,
  requestId: string,
  owner: Decider,
  credential: AuthenticationResponseJSON | undefined,
  context: EventContext,
): Promise<void> {
  const signIn = await decidable(deps, requestId, owner.user_id);
  if (signIn.approval === 'approved') return;
  if (signIn.status === 'error') throw new InvalidRequest('this sign-in has already been declined');
  if (signIn.approval !== 'pending') throw new InvalidRequest('this sign-in is not waiting for approval');
  await freshlyVerified(deps, requestId, owner, signIn.owner_passkeys, credential);
  const approved = await deps.store.approvals.approve(requestId, owner.user_id);
  if (approved) return void deps.events.emit('sign-in.approved', approved, context);
  // Lost a race: approved meanwhile (fine), or declined or expired (say so).
  const now = await decidable(deps, requestId, owner.user_id);
  if (now.approval !== 'approved') throw new InvalidRequest('this sign-in can no longer be approved');
}

/** authenticated -> error (access_denied): the sign-in ends, for the agent and its page alike; denying again is harmless. */
export async function deny(deps: ApprovalDeps, requestId: string, owner: Decider, context: EventContext): Promise<void> {
  const signIn = await decidable(deps, requestId, owner.user_id);
  if (signIn.status === 'error') return;
  if (signIn.approval !== 'pending') throw new InvalidRequest('this sign-in is not waiting for approval');
  const denied = await deps.store.approvals.deny(requestId, owner.user_id);
  if (denied) return void deps.events.emit('sign-in.denied', { ...denied, by: 'owner' }, context);
  const now = await decidable(deps, requestId, owner.user_id);
  if (now.status !== 'error') throw new InvalidRequest('this sign-in can no longer be declined');
}
