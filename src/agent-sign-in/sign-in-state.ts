import { AccessDenied, OAuthError, RequestExpired } from '../errors.js';
import { SIGN_IN_ERRORS, type SignInStatus } from '../protocol/sign-in.js';
import type { Approval, SignInState } from '../store/sign-ins.js';

/**
 * What a sign-in's state means to whoever asks, worked out here only (docs/protocol.md, sign-in
 * states). The codes and descriptions are the same everywhere; each endpoint keeps its own HTTP
 * status for a denied sign-in (authenticate 403, the pages 400, check-status 200 with
 * `status: "error"`).
 */

/** A person pressed Deny, or a kill switch ended the sign-in in flight (access_denied). */
const DENIED = 'this sign-in was denied';
/** The agent's owner declined it (access_denied too; check-status adds `approval: "denied"`). */
const OWNER_DENIED = "the agent's owner denied this sign-in";

/** Why a sign-in can no longer move on, as the error to answer with; undefined while it can. */
export function endedError(state: SignInState, deniedStatus: 400 | 403): OAuthError | undefined {
  if (state.expired) return new RequestExpired();
  if (state.status === 'error') {
    return new AccessDenied(state.approval === 'denied' ? OWNER_DENIED : DENIED, deniedStatus, state.error ?? SIGN_IN_ERRORS.accessDenied);
  }
  return undefined;
}

/**
 * check-status's body: the status, and for an ended sign-in, why; never the code. An authenticated
 * sign-in that asked its owner's approval says where that stands (`pending`, then `approved`); one
 * its owner declined says `denied`, so that the agent can tell it from any other access_denied.
 */
export type StatusAnswer =
  | { status: Exclude<SignInStatus, 'error'>; approval?: Approval }
  | { status: 'error'; error: string; error_description: string; approval?: 'denied' };

export function statusAnswer(state: SignInState): StatusAnswer {
  const ended = endedError(state, 400);
  if (ended) {
    const answer = { status: 'error' as const, error: ended.error, error_description: ended.description };
    return !state.expired && state.approval === 'denied' ? { ...answer, approval: 'denied' } : answer;
  }
  const status = state.status as Exclude<SignInStatus, 'error'>;
  return status === 'authenticated' && state.approval ? { status, approval: state.approval } : { status };
}
