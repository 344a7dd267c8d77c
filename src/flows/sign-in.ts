import type { FastifyReply, FastifyRequest } from 'fastify';
import { logAudit } from '../audit.js';
import { safeEqual, sha256, verifySecret } from '../crypto/secrets.js';
import { AccessDenied, Conflict, InvalidCredentials, InvalidRequest, NotFound, OAuthError, RedirectOriginMismatch } from '../errors.js';
import type { SignInWatch } from '../events/sign-in-changes.js';
import { redirectOrigin, redirectToClient } from '../oauth/redirect.js';
import { SIGN_IN_ERRORS, type SignInStatus } from '../protocol/sign-in.js';
import { idText } from '../protocol/text.js';
import type { Services } from '../services.js';
import type { AuthenticationFailure } from '../store/audit-log.js';
import type { AuthenticatedSignIn, EndedSignIn, NewSignIn, SignInDetails, SignInState } from '../store/sign-ins.js';
import { browserSecret, clearBindingCookie, newBrowserBinding, setBindingCookie } from './browser-binding.js';
import { endedError, type StatusAnswer, statusAnswer } from './sign-in-state.js';
import { noteExpiry, recordStep, type StepRecorders } from './steps.js';

/**
 * The sign-in lifecycle (docs/protocol.md): a website's /authorize starts it in a browser, the
 * agent authenticates it, the browser completes it (or, with REQUIRE_APPROVAL, the person denies
 * it), and check-status reports it. Every transition is one guarded statement in the store; this
 * module decides what each outcome means to the caller and records each step once.
 */

export const requestIdSchema = idText().describe('the authorization request id from the sign-in page');

const recorders = ({ metrics }: Services, request: FastifyRequest): StepRecorders => ({ log: request.log, metrics });

/** Records a new sign-in and binds it to the browser that asked (docs/security.md). */
export async function start(services: Services, request: FastifyRequest, reply: FastifyReply, input: Omit<NewSignIn, 'browser_hash'>) {
  const { config, store } = services;
  const binding = newBrowserBinding();
  const created = await store.signIns.create({ ...input, browser_hash: binding.hash }, config.ttl.authRequest);
  setBindingCookie(reply, config, created.id, binding.secret);
  recordStep(recorders(services, request), 'started', { request_id: created.id, client_id: input.client_id });
  return created;
}

export interface AgentProof {
  requestId: string;
  agentId: string;
  agentSecret: string;
  model: string;
  /** The website the agent means to sign in to, as an origin. */
  expectedOrigin?: string;
}

/** The authenticate answer: which website the agent has just signed in to, so it can check it. */
const authenticatedAnswer = (requestId: string, request: AuthenticatedSignIn) => ({
  status: 'authenticated' as const,
  request_id: requestId,
  client_id: request.client_id,
  client_name: request.client_name,
  redirect_origin: redirectOrigin(request.redirect_uri),
});

/** pending -> authenticated: the agent proves who it is for one sign-in. */
export async function authenticate(services: Services, request: FastifyRequest, proof: AgentProof) {
  const { store } = services;
  const { requestId, agentId, agentSecret, model, expectedOrigin } = proof;
  const who = { request_id: requestId, agent_id: agentId, model };
  // The reason goes to the audit log (row and line), never into the answer.
  const refuse = async (reason: AuthenticationFailure, error: OAuthError) => {
    await store.auditLog.recordAuthenticationFailure({ requestId, agentId, model, reason });
    logAudit(request.log, 'agent_authentication_failed', { ...who, reason });
    return error;
  };

  // Unknown agent, wrong secret and inactive agent: one answer, and the same work for each
  // (the hash, then the audit row).
  const agent = await store.agents.getWithSecret(agentId);
  const secretMatches = verifySecret(agentSecret, agent?.secret_hash);
  if (!secretMatches || !agent?.active) {
    throw await refuse(!agent ? 'unknown_agent' : !secretMatches ? 'wrong_secret' : 'inactive_agent', new InvalidCredentials());
  }

  // Checked before anything changes: a sign-in for another website stays untouched. A request's
  // redirect URI never changes, so reading it first leaves no gap.
  if (expectedOrigin !== undefined) {
    const wanted = redirectOrigin(expectedOrigin);
    const target = await store.signIns.get(requestId);
    // This read may be the one that notices the expiry: log it now, the later reads will not.
    if (target) noteExpiry(recorders(services, request), target);
    const origin = target && redirectOrigin(target.redirect_uri);
    if (origin && origin !== wanted) {
      throw await refuse('wrong_website', new RedirectOriginMismatch(origin, wanted));
    }
  }

  const authenticated = await store.signIns.authenticate(requestId, agentId, model);
  if (authenticated) {
    recordStep(recorders(services, request), 'authenticated', { ...who, client_id: authenticated.client_id });
    return authenticatedAnswer(requestId, authenticated);
  }
  const current = await store.signIns.getDetails(requestId);
  if (!current) throw await refuse('request_not_found', new NotFound('the authorization request does not exist'));
  noteExpiry(recorders(services, request), current);
  const sameCall = current.agent_id === agentId && current.model === model;
  // Repeating a successful call is harmless (the agent may not have seen our first answer).
  if (sameCall && (current.status === 'authenticated' || current.status === 'completed') && !current.expired) {
    return authenticatedAnswer(requestId, current);
  }
  const ended = endedError(current, 403);
  if (ended) throw await refuse(current.expired ? 'request_expired' : 'request_denied', ended);
  // Still pending: the website reserved it for another agent, which may still come.
  if (current.status === 'pending') {
    throw await refuse('login_hint_mismatch', new AccessDenied('this sign-in is reserved for another agent (login_hint)'));
  }
  const taken =
    current.agent_id === agentId
      ? 'this agent has already authenticated this request with another model'
      : 'another agent has already authenticated this request';
  throw await refuse('request_taken', new Conflict(SIGN_IN_ERRORS.requestAlreadyAuthenticated, taken));
}

export interface BrowserSignIn {
  details: SignInDetails;
  /** The browser's binding secret (from its cookie) and the hash the request stores. */
  secret: string;
  browserHash: string;
}

/**
 * Loads a sign-in for the browser that started it. A missing or foreign binding cookie means
 * another browser (or an attacker who read the request id) is trying to collect the code.
 * A sign-in that has ended says why first (check-status tells anyone as much): the binding
 * cookie lives only as long as the request, so at expiry the browser has already dropped it.
 */
export async function loadBrowserSignIn(services: Services, request: FastifyRequest, requestId: string): Promise<BrowserSignIn> {
  const details = await services.store.signIns.getDetails(requestId);
  if (!details) throw new NotFound('the authorization request does not exist');
  noteExpiry(recorders(services, request), details);
  const ended = endedError(details, 400);
  if (ended) throw ended;
  if (details.status === 'completed') throw new InvalidRequest('this sign-in has already been completed');
  const secret = browserSecret(request, services.config, requestId);
  const browserHash = secret ? sha256(secret) : '';
  if (!secret || !safeEqual(details.browser_hash, browserHash)) {
    throw new InvalidRequest('this sign-in was started in another browser; start again from the website');
  }
  return { details, secret, browserHash };
}

/** One browser's step in its own sign-in: who asks, and the binding hash its cookie proves. */
export interface BrowserStep {
  services: Services;
  request: FastifyRequest;
  reply: FastifyReply;
  requestId: string;
  browserHash: string;
}

/** A sign-in ended in its browser: its cookie has no use left, and the step is recorded. */
function endedInBrowser({ services, request, reply, requestId }: BrowserStep, step: 'completed' | 'denied', ended: EndedSignIn) {
  clearBindingCookie(reply, services.config, requestId);
  const { client_id, agent_id, model } = ended;
  recordStep(recorders(services, request), step, { request_id: requestId, client_id, agent_id, model });
}

/**
 * authenticated -> completed: issues the code for this browser's sign-in and returns the website's
 * redirect URL; undefined when the sign-in was not authenticated, unexpired and this browser's.
 */
export async function tryComplete(browser: BrowserStep): Promise<string | undefined> {
  const { config, store } = browser.services;
  const done = await store.signIns.complete(browser.requestId, browser.browserHash, config.ttl.authCode);
  if (!done) return undefined;
  endedInBrowser(browser, 'completed', done);
  return redirectToClient(done.redirect_uri, { code: done.code, state: done.state, iss: config.issuer });
}

/** As tryComplete, for callers that have checked the sign-in: failing now means a lost race. */
export async function complete(browser: BrowserStep): Promise<string> {
  const location = await tryComplete(browser);
  // Another tab completed it, or it expired in between.
  if (!location) throw new InvalidRequest('this sign-in can no longer be completed; start again from the website');
  return location;
}

/** authenticated -> error (access_denied): the person pressed Deny; returns the website's redirect URL. */
export async function deny(browser: BrowserStep): Promise<string> {
  const { config, store } = browser.services;
  const denied = await store.signIns.deny(browser.requestId, browser.browserHash);
  if (!denied) throw new InvalidRequest('this sign-in can no longer be answered; start again from the website');
  endedInBrowser(browser, 'denied', denied);
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
  /** Answer at once with the state as it is: the caller hung up, or the server is shutting down. */
  stop: AbortSignal;
}

/**
 * Holds a long poll: returns the state once its status differs from `before`, once the sign-in
 * expires or is gone, when the wait is up, or when `stop` fires.
 */
async function awaitChange(
  read: () => Promise<SignInState | undefined>,
  initial: SignInState,
  before: SignInStatus,
  watch: SignInWatch,
  { waitMs, stop }: StatusWait,
) {
  const deadline = Date.now() + waitMs;
  let state: SignInState | undefined = initial;
  while (state && statusAnswer(state).status === before && (before === 'pending' || before === 'authenticated')) {
    const left = Math.min(deadline, state.expires_at.getTime() + 50) - Date.now();
    if (left <= 0 || stop.aborted) break;
    await watch.nextChange(Math.min(left, RECHECK_MS), stop);
    // Undefined once the sign-in is gone (purged or its client deleted): the caller hears 404.
    state = await read();
  }
  return state;
}

/** A sign-in's state as check-status reports it; with `wait`, once it changes (a long poll). */
export async function status(services: Services, request: FastifyRequest, requestId: string, wait?: StatusWait): Promise<StatusAnswer> {
  const { store } = services;
  const read = () => store.signIns.get(requestId);
  const watch = wait ? services.signInChanges.watch(requestId) : undefined;
  let state: SignInState | undefined;
  try {
    state = await read();
    if (state && watch && wait) state = await awaitChange(read, state, wait.lastStatus ?? statusAnswer(state).status, watch, wait);
  } finally {
    watch?.stop();
  }
  if (!state) throw new NotFound('the authorization request does not exist');
  noteExpiry(recorders(services, request), state);
  return statusAnswer(state);
}
