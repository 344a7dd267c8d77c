import { type AssertedAgent, type AssertionDeps, checkAssertion } from '../agent-keys/assertion.js';
import type { Config } from '../config.js';
import { generateMatchCode, safeEqual, verifySecret } from '../crypto/secrets.js';
import type { SignInChanges, SignInWatch } from '../db/sign-in-changes.js';
import { AccessDenied, Conflict, InvalidCredentials, InvalidRequest, NotFound, OAuthError, RedirectOriginMismatch } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import { redirectOrigin, redirectToClient } from '../oauth/redirect.js';
import { scopeGrantsEmail } from '../oauth/scopes.js';
import { SIGN_IN_ERRORS, type SignInStatus } from '../protocol/sign-in.js';
import { idText } from '../protocol/text.js';
import type { AuthenticationFailure } from '../store/audit-log.js';
import type { Store } from '../store/index.js';
import type { Approval, AuthenticatedSignIn, EndedSignIn, NewSignIn, SignInDetails, SignInState } from '../store/sign-ins.js';
import { bindingHash, newBrowserBinding } from './browser-binding.js';
import { endedError, type StatusAnswer, statusAnswer } from './sign-in-state.js';

/**
 * The sign-in lifecycle (docs/protocol.md): a website's /authorize starts it in a browser, the
 * agent authenticates it, the browser completes it (or, with REQUIRE_APPROVAL, the person denies
 * it), and check-status reports it. Every transition is one guarded statement in the store; this
 * module decides what each outcome means to the caller and emits each step once (src/events). It
 * takes plain values: the routes read and set the cookies and render the answers.
 */

export const requestIdSchema = idText().describe('the authorization request id from the sign-in page');

/** What the sign-in flow uses: its settings, the store slices it reads and writes, the events it emits. */
export interface SignInDeps {
  config: Pick<Config, 'issuer' | 'ttl' | 'owners'>;
  store: Pick<Store, 'signIns' | 'agents' | 'agentKeys' | 'auditLog'>;
  events: Events;
  /** For the long poll of check-status. */
  signInChanges: SignInChanges;
}

/**
 * A sign-in as one read finds it. The read that notices an expiry records it (src/store/sign-ins.ts)
 * and it is emitted here, once, however often it is reported afterwards: every read of this flow
 * goes through here.
 */
async function observe<T extends SignInState>({ events }: SignInDeps, read: Promise<T | undefined>, context: EventContext) {
  const state = await read;
  if (state?.newly_expired) {
    const { id: request_id, client_id, agent_id, model } = state;
    events.emit('sign-in.expired', { request_id, client_id, agent_id, model, awaiting_owner: state.approval === 'pending' }, context);
  }
  return state;
}

/**
 * Records a new sign-in, bound to the browser that asked (docs/security.md): the caller sets
 * `bindingSecret` in that browser's cookie.
 */
export async function start(deps: SignInDeps, input: Omit<NewSignIn, 'browser_hash'>, context: EventContext) {
  const binding = newBrowserBinding();
  const created = await deps.store.signIns.create({ ...input, browser_hash: binding.hash }, deps.config.ttl.authRequest);
  deps.events.emit('sign-in.started', { request_id: created.id, client_id: input.client_id }, context);
  return { ...created, bindingSecret: binding.secret };
}

/** How the agent proves who it is: its secret, or an assertion signed by one of its keys (agent-keys/assertion.ts). */
export type AgentCredential = { secret: string } | { assertion: string };

export interface AgentProof {
  requestId: string;
  agentId: string;
  credential: AgentCredential;
  model: string;
  /** The website the agent means to sign in to, as an origin. */
  expectedOrigin?: string;
}

/**
 * The authenticate answer: which website the agent has just signed in to, so it can check it, and
 * whether the sign-in waits for its owner's approval.
 */
const authenticatedAnswer = (requestId: string, signIn: AuthenticatedSignIn) => ({
  status: 'authenticated' as const,
  request_id: requestId,
  client_id: signIn.client_id,
  client_name: signIn.client_name,
  redirect_origin: redirectOrigin(signIn.redirect_uri),
  // A denied sign-in has ended: it is answered with access_denied, never this.
  ...(signIn.approval === 'pending' || signIn.approval === 'approved' ? { approval: signIn.approval } : {}),
});

/**
 * The agent the credential proves to be `agentId` (and active), or why it does not. Every reason
 * gets the same answer; only the audit log tells them apart.
 */
async function checkCredential(
  deps: SignInDeps & AssertionDeps,
  { agentId, requestId, credential }: AgentProof,
): Promise<AuthenticationFailure | AssertedAgent> {
  if ('assertion' in credential) return checkAssertion(deps, { assertion: credential.assertion, agentId, requestId });
  // Unknown agent, wrong secret, key-only and inactive agent: the same work for each (the hash,
  // then the audit row).
  const agent = await deps.store.agents.getWithSecret(agentId);
  const secretMatches = verifySecret(credential.secret, agent?.secret_hash);
  if (!agent) return 'unknown_agent';
  if (!secretMatches) return 'wrong_secret';
  if (!agent.secret_enabled) return 'secret_disabled';
  return agent.active ? agent : 'inactive_agent';
}

/**
 * Why the sign-in, as read before the write, is not this agent's to authenticate, if it is not: a
 * sign-in for another website stays untouched (a request's redirect URI never changes, so reading
 * it first leaves no gap), and REQUIRE_VERIFIED_EMAIL shares no email of an owner who never proved
 * the mailbox (the request stays pending, so the agent may try again once the owner has used a
 * sign-in link).
 */
function checkTarget(
  deps: SignInDeps,
  target: SignInDetails | undefined,
  agent: AssertedAgent,
  expectedOrigin: string | undefined,
): [AuthenticationFailure, OAuthError] | undefined {
  if (!target) return undefined;
  if (deps.config.owners.requireVerifiedEmail && !agent.email_verified && scopeGrantsEmail(target.scope)) {
    const refusal = new AccessDenied('the owner of this agent has not verified their email; they can at /account', 403, 'email_not_verified');
    return ['email_not_verified', refusal];
  }
  const origin = redirectOrigin(target.redirect_uri);
  if (expectedOrigin !== undefined && origin !== redirectOrigin(expectedOrigin)) {
    return ['wrong_website', new RedirectOriginMismatch(origin, redirectOrigin(expectedOrigin))];
  }
  return undefined;
}

/** Why a sign-in the guarded write could not authenticate refused this agent, or its earlier answer when the call is a repeat. */
function afterRefusedWrite(
  current: SignInDetails | undefined,
  { agentId, model, requestId }: AgentProof,
): ReturnType<typeof authenticatedAnswer> | [AuthenticationFailure, OAuthError] {
  if (!current) return ['request_not_found', new NotFound('the authorization request does not exist')];
  const sameCall = current.agent_id === agentId && current.model === model;
  // Repeating a successful call is harmless (the agent may not have seen our first answer).
  if (sameCall && (current.status === 'authenticated' || current.status === 'completed') && !current.expired) {
    return authenticatedAnswer(requestId, current);
  }
  const ended = endedError(current, 403);
  if (ended) return [current.expired ? 'request_expired' : 'request_denied', ended];
  // Still pending: the website reserved it for another agent, which may still come.
  if (current.status === 'pending') return ['login_hint_mismatch', new AccessDenied('this sign-in is reserved for another agent (login_hint)')];
  const taken =
    current.agent_id === agentId
      ? 'this agent has already authenticated this request with another model'
      : 'another agent has already authenticated this request';
  return ['request_taken', new Conflict(SIGN_IN_ERRORS.requestAlreadyAuthenticated, taken)];
}

/**
 * pending -> authenticated: the agent proves who it is for one sign-in. The agent is read once (with
 * its credential), the sign-in at most once before the one guarded write (when the website or the
 * owner's email must be checked first), and once after it only when the write was refused, to say why.
 */
export async function authenticate(deps: SignInDeps, proof: AgentProof, context: EventContext) {
  const { store, events } = deps;
  const { requestId, agentId, model, expectedOrigin } = proof;
  const who = { request_id: requestId, agent_id: agentId, model };
  // The reason goes to the audit log (row and line), never into the answer.
  const refuse = async ([reason, error]: [AuthenticationFailure, OAuthError]) => {
    await store.auditLog.recordAuthenticationFailure({ requestId, agentId, model, reason });
    events.emit('agent.authentication_failed', { ...who, reason }, context);
    return error;
  };

  const agent = await checkCredential(deps, proof);
  if (typeof agent === 'string') throw await refuse([agent, new InvalidCredentials()]);

  const mustCheck = expectedOrigin !== undefined || (deps.config.owners.requireVerifiedEmail && !agent.email_verified);
  if (mustCheck) {
    const refused = checkTarget(deps, await observe(deps, store.signIns.observeDetails(requestId), context), agent, expectedOrigin);
    if (refused) throw await refuse(refused);
  }

  const authenticated = await store.signIns.authenticate(requestId, agentId, model, generateMatchCode());
  if (authenticated) {
    const facts = { ...who, client_id: authenticated.client_id };
    events.emit('sign-in.authenticated', facts, context);
    if (authenticated.approval === 'pending') events.emit('sign-in.approval_requested', facts, context);
    return authenticatedAnswer(requestId, authenticated);
  }
  const answer = afterRefusedWrite(await observe(deps, store.signIns.observeDetails(requestId), context), proof);
  if (Array.isArray(answer)) throw await refuse(answer);
  return answer;
}

/** One browser's step in its own sign-in: the request, and the binding secret its cookie holds. */
export interface BrowserStep {
  requestId: string;
  secret: string;
}

/** A sign-in as the browser that started it sees it, with the binding secret that browser proved. */
export interface BrowserSignIn extends BrowserStep {
  details: SignInDetails;
}

/**
 * Loads a sign-in for the browser that started it (`secret`: what its cookie holds, if anything).
 * A missing or foreign secret means another browser (or an attacker who read the request id) is
 * trying to collect the code. A sign-in that has ended says why first (check-status tells anyone
 * as much): the binding cookie lives only as long as the request, so at expiry the browser has
 * already dropped it.
 */
export async function loadBrowserSignIn(
  deps: SignInDeps,
  requestId: string,
  secret: string | undefined,
  context: EventContext,
  /** True: a completed sign-in is loaded too, for its browser to complete again (tryComplete). */
  completed = false,
): Promise<BrowserSignIn> {
  const details = await observe(deps, deps.store.signIns.observeDetails(requestId), context);
  if (!details) throw new NotFound('the authorization request does not exist');
  const ended = endedError(details, 400);
  if (ended) throw ended;
  if (details.status === 'completed' && !completed) throw new InvalidRequest('this sign-in has already been completed');
  if (!secret || !safeEqual(details.browser_hash, bindingHash(secret))) {
    throw new InvalidRequest('this sign-in was started in another browser; start again from the website');
  }
  return { details, requestId, secret };
}

/** Who a sign-in that ended in its browser was for, as its event carries it (the caller drops the browser's cookie). */
const endedFacts = (requestId: string, { client_id, agent_id, model }: EndedSignIn) => ({ request_id: requestId, client_id, agent_id, model });

/**
 * authenticated -> completed: issues the code for this browser's sign-in and returns the website's
 * redirect URL; undefined when the sign-in was not authenticated, unexpired and this browser's.
 * Retry-safe: the same browser back for a sign-in it completed whose code was never redeemed gets a
 * fresh code that spends the undelivered one (src/store/sign-ins.ts, complete), so that a lost
 * answer (a 503 whose write committed anyway) does not lose the sign-in.
 */
export async function tryComplete(deps: SignInDeps, { requestId, secret }: BrowserStep, context: EventContext): Promise<string | undefined> {
  const { config, store } = deps;
  const done = await store.signIns.complete(requestId, bindingHash(secret), config.ttl.authCode);
  if (!done) return undefined;
  // The sign-in completed once; a retry is not a second completion.
  if (done.again) context.log.info({ request_id: requestId }, 'sign-in completed again by its browser: its undelivered code replaced');
  else deps.events.emit('sign-in.completed', endedFacts(requestId, done), context);
  return redirectToClient(done.redirect_uri, { code: done.code, state: done.state, iss: config.issuer });
}

/** As tryComplete, for callers that have checked the sign-in: failing now means a lost race. */
export async function complete(deps: SignInDeps, browser: BrowserStep, context: EventContext): Promise<string> {
  const location = await tryComplete(deps, browser, context);
  // Another tab completed it, or it expired in between.
  if (!location) throw new InvalidRequest('this sign-in can no longer be completed; start again from the website');
  return location;
}

/** authenticated -> error (access_denied): the person pressed Deny; returns the website's redirect URL. */
export async function deny(deps: SignInDeps, { requestId, secret }: BrowserStep, context: EventContext): Promise<string> {
  const { config, store } = deps;
  const denied = await store.signIns.deny(requestId, bindingHash(secret));
  if (!denied) throw new InvalidRequest('this sign-in can no longer be answered; start again from the website');
  deps.events.emit('sign-in.denied', { ...endedFacts(requestId, denied), by: 'person' }, context);
  return redirectToClient(denied.redirect_uri, {
    error: SIGN_IN_ERRORS.accessDenied,
    error_description: 'the user denied the sign-in',
    state: denied.state,
    iss: config.issuer,
  });
}

/** Re-read the state at least this often while holding a long poll, in case a notification was lost. */
const RECHECK_MS = 5000;

export interface StatusWait {
  /** Hold the answer up to this long while the status stays `lastStatus`. */
  waitMs: number;
  /** The status the caller last saw (default: the status when the call arrives). */
  lastStatus?: SignInStatus;
  /** The owner's approval the caller last saw (default: as it is when the call arrives). */
  lastApproval?: Approval;
  /** Answer at once with the state as it is: the caller hung up, or the server is shutting down. */
  stop: AbortSignal;
}

/**
 * Holds a long poll: returns the state once its status differs from `before` or its approval from
 * `approvalBefore`, once the sign-in expires or is gone, when the wait is up, or when `stop` fires.
 */
async function awaitChange(
  read: () => Promise<SignInState | undefined>,
  initial: SignInState,
  before: SignInStatus,
  approvalBefore: Approval | null,
  watch: SignInWatch,
  { waitMs, stop }: StatusWait,
) {
  const deadline = Date.now() + waitMs;
  let state: SignInState | undefined = initial;
  const unchanged = (s: SignInState) => statusAnswer(s).status === before && s.approval === approvalBefore;
  while (state && unchanged(state) && (before === 'pending' || before === 'authenticated')) {
    const left = Math.min(deadline, state.expires_at.getTime() + 50) - Date.now();
    if (left <= 0 || stop.aborted) break;
    await watch.nextChange(Math.min(left, RECHECK_MS), stop);
    // Undefined once the sign-in is gone (purged or its client deleted): the caller hears 404.
    state = await read();
  }
  return state;
}

/** A sign-in's state as check-status reports it; with `wait`, once it changes (a long poll). */
export async function status(deps: SignInDeps, requestId: string, context: EventContext, wait?: StatusWait): Promise<StatusAnswer> {
  const read = () => observe(deps, deps.store.signIns.observe(requestId), context);
  const watch = wait ? deps.signInChanges.watch(requestId) : undefined;
  let state: SignInState | undefined;
  try {
    state = await read();
    if (state && watch && wait) {
      const before = wait.lastStatus ?? statusAnswer(state).status;
      state = await awaitChange(read, state, before, wait.lastApproval ?? state.approval, watch, wait);
    }
  } finally {
    watch?.stop();
  }
  if (!state) throw new NotFound('the authorization request does not exist');
  return statusAnswer(state);
}
