import {
  type AssertionKey,
  type AssertionSigner,
  createAssertion,
  createClientAssertion,
  keyFromPrivateKey,
  type PrivateKeyInput,
} from './assertion.js';
import {
  AgentAuthError,
  errorFromBody,
  PossibleHijackError,
  RateLimitedError,
  RequestAlreadyAuthenticatedError,
  TimeoutError,
  WrongWebsiteError,
} from './errors.js';
import { type PageLike, readRequestId } from './page.js';
import { MAX_WAIT_SECONDS, SIGN_IN_ERRORS, type SignInStatus } from './protocol.js';
import { sleep } from './sleep.js';

interface CommonOptions {
  /** The authorization server's base URL (its issuer: assertions name it as their audience), e.g. `https://auth.example`. */
  baseUrl: string;
  agentId: string;
  /** Name of the model this agent runs on; the server records it with the sign-in. */
  model: string;
  /** A fetch implementation; defaults to the global one. */
  fetch?: typeof fetch;
}

/**
 * How the agent proves who it is, one of three: its secret; its private key (Ed25519 or P-256),
 * which signs a fresh assertion for every authenticate call and never leaves the process; or a
 * `sign` callback for a key held elsewhere, with the key's id and algorithm.
 */
export type AgentAuthClientOptions = CommonOptions &
  (
    | { agentSecret: string; privateKey?: never; sign?: never; keyId?: never; algorithm?: never }
    | {
        privateKey: PrivateKeyInput;
        /** The key's id at the server; by default its RFC 7638 thumbprint, as the server names a key registered without one. */
        keyId?: string;
        agentSecret?: never;
        sign?: never;
        algorithm?: never;
      }
    | { sign: AssertionSigner; keyId: string; algorithm: AssertionKey['algorithm']; agentSecret?: never; privateKey?: never }
  );

/** Where the owner's approval of an authenticated sign-in stands, when the owner's policy asked for it. */
export type Approval = 'pending' | 'approved';

export type RequestStatus =
  | { status: Exclude<SignInStatus, 'error'>; approval?: Approval }
  /** approval `denied`: the agent's owner declined the sign-in. */
  | { status: 'error'; error: string; error_description: string; approval?: 'denied' };

/** What a wait reports through `onStatus`: the request's status, or that it waits for its agent's owner to approve it. */
export type WaitStatus = Exclude<SignInStatus, 'error'> | 'waiting_for_owner_approval';

/** Default longest wait once the owner's approval is pending: a person must notice and act. */
export const OWNER_APPROVAL_TIMEOUT_MS = 300_000;

export interface CallOptions {
  signal?: AbortSignal;
}

export interface AuthenticateOptions extends CallOptions {
  /**
   * The origin (scheme://host[:port]) of the website the agent means to sign in to. The server
   * refuses a sign-in for another website (WrongWebsiteError) without authenticating it.
   */
  expectedRedirectOrigin?: string;
}

/** The 200 answer of authenticate: the sign-in and the website it is for. */
export interface Authenticated {
  status: 'authenticated';
  request_id: string;
  client_id: string;
  client_name: string;
  /** scheme://host[:port] of the redirect URI: where the browser takes the code. */
  redirect_origin: string;
  /** `pending` when the agent's owner must approve this sign-in before the browser gets a code. */
  approval?: 'pending';
}

export interface PollOptions {
  /** Delay between polls, and the first delay of the backoff (default 1000 ms). */
  intervalMs?: number;
  /** Double the delay after every poll, up to `maxIntervalMs`; for long waits (default false). */
  backoff?: boolean;
  /** Longest delay of the backoff (default 30 000 ms). */
  maxIntervalMs?: number;
}

export interface StatusOptions extends CallOptions {
  /** Long poll: the server holds the answer up to this many seconds (at most 25) until the state changes. */
  wait?: number;
  /** With `wait`: the status last seen; the server holds the answer only while the request still has it. */
  lastStatus?: RequestStatus['status'];
  /** With `wait`: the approval last seen; the server holds the answer while it stays so. */
  lastApproval?: Approval;
}

export interface WaitOptions extends PollOptions, CallOptions {
  /**
   * Ask the server to hold each poll until the state changes (default true). A server that does
   * not long-poll answers at once, and the client falls back to polling every `intervalMs`.
   */
  longPoll?: boolean;
  /** Give up after this long (default 60 000 ms; docs/protocol.md recommends 30 to 60 s). */
  timeoutMs?: number;
  /**
   * Once the owner's approval is pending, wait at least this long from then (default 300 000 ms):
   * a person must open the approvals page and confirm. A denial rejects with OwnerDeniedError.
   */
  approvalTimeoutMs?: number;
  /** Called whenever what the wait sees changes, e.g. `waiting_for_owner_approval`: tell the person. */
  onStatus?: (status: WaitStatus) => void;
  /** Resolve once the browser has the code (`completed`, default) or as soon as the agent is `authenticated`. */
  until?: 'completed' | 'authenticated';
}

export interface SignInOptions extends WaitOptions {
  /** How long to wait for the browser to show the authorization page (default 30 000 ms). */
  pageTimeoutMs?: number;
  /**
   * The website the agent means to sign in to, as an origin (`https://shop.example`; a URL is cut
   * to its origin). A sign-in for another website is refused with WrongWebsiteError, before the
   * agent is authenticated for it. Strongly recommended: the request id on a page may not be the
   * website's own.
   */
  expectedWebsite?: string;
}

/** The delay before poll number `attempt + 1`: fixed, or 1 s doubling up to 30 s with `backoff`. */
export function pollDelay(attempt: number, options: PollOptions = {}): number {
  const { intervalMs = 1000, backoff = false, maxIntervalMs = 30_000 } = options;
  return backoff ? Math.min(intervalMs * 2 ** attempt, maxIntervalMs) : intervalMs;
}

/** `Retry-After` in seconds, from either of its forms (delta-seconds or an HTTP date). */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The URL without its trailing slashes; by index, as `/\/+$/` would retry from every slash of a long run. */
function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

/** Where a response redirects, when it does. */
function redirectOf(res: Response, base: URL): URL | undefined {
  const location = res.headers.get('location');
  return res.status >= 300 && res.status < 400 && location ? new URL(location, base) : undefined;
}

/** The cookies a response sets, as a `Cookie` header sends them back (name=value only). */
function cookiesOf(res: Response): string {
  return res.headers
    .getSetCookie()
    .map((line) => line.split(';')[0].trim())
    .join('; ');
}

/**
 * The authorization response carried by a redirect (RFC 6749 §4.1.2): the code, once `state` and
 * the RFC 9207 `iss` are the ones expected; an `error` response is thrown as its AgentAuthError.
 */
export function authorizationResponse(redirect: URL, expected: { state?: string; issuer: string }): { code: string; state?: string } {
  const params = redirect.searchParams;
  const iss = params.get('iss');
  // RFC 9207 §2.4: a response from another authorization server is refused (mix-up attack).
  if (iss !== null && iss !== expected.issuer)
    throw new AgentAuthError('invalid_request', `the authorization response is from ${iss}, not ${expected.issuer}`);
  if ((params.get('state') ?? undefined) !== expected.state)
    throw new AgentAuthError('invalid_request', 'the authorization response carries another state');
  const error = params.get('error');
  if (error !== null) throw errorFromBody({ error, error_description: params.get('error_description') ?? undefined });
  const code = params.get('code');
  if (!code) throw new AgentAuthError('invalid_request', 'the authorization response carries no code');
  return { code, ...(expected.state !== undefined && { state: expected.state }) };
}

/** Failures worth another poll: rate limits, server trouble, the network. */
function isTransient(err: unknown): boolean {
  if (err instanceof RateLimitedError) return true;
  if (err instanceof AgentAuthError) return err.status !== undefined && err.status >= 500;
  return err instanceof TypeError || (err instanceof DOMException && err.name === 'TimeoutError');
}

/** The agent's side of a sign-in: authenticate on the back channel, then watch the request. */
export class AgentAuthClient {
  readonly baseUrl: string;
  readonly #agentId: string;
  readonly #agentSecret: string | undefined;
  /** The signing key, once resolved (a private key is parsed at the first call). */
  readonly #key: () => Promise<AssertionKey>;
  readonly #model: string;
  readonly #fetch: typeof fetch;

  constructor(options: AgentAuthClientOptions) {
    const given = [options.agentSecret, options.privateKey, options.sign].filter((v) => v !== undefined).length;
    if (given !== 1) throw new TypeError('give exactly one of agentSecret, privateKey and sign');
    this.baseUrl = withoutTrailingSlashes(new URL(options.baseUrl).href);
    this.#agentId = options.agentId;
    this.#agentSecret = options.agentSecret;
    const { privateKey, keyId, sign } = options;
    let key: Promise<AssertionKey> | undefined;
    this.#key = () =>
      (key ??=
        privateKey !== undefined
          ? keyFromPrivateKey(privateKey, keyId)
          : Promise.resolve({ keyId: keyId!, algorithm: options.algorithm!, sign: sign! }));
    this.#model = options.model;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Proves this agent's identity for one authorization request; the answer names the website. */
  async authenticate(requestId: string, options: AuthenticateOptions = {}): Promise<Authenticated> {
    return this.#call('/api/agent/authenticate', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        request_id: requestId,
        agent_id: this.#agentId,
        ...(await this.#proof(requestId)),
        model: this.#model,
        expected_redirect_origin: options.expectedRedirectOrigin,
      }),
      signal: options.signal,
    });
  }

  /** The request's current state; a `status: "error"` body is returned, not thrown. */
  checkStatus(requestId: string, options: StatusOptions = {}): Promise<RequestStatus> {
    const query = new URLSearchParams({ request_id: requestId });
    if (options.wait) query.set('wait', String(Math.min(Math.floor(options.wait), MAX_WAIT_SECONDS)));
    if (options.wait && options.lastStatus) query.set('last_status', options.lastStatus);
    if (options.wait && options.lastApproval) query.set('last_approval', options.lastApproval);
    return this.#call(`/api/check-status?${query}`, { signal: options.signal });
  }

  /**
   * Polls check-status until the request reaches `until`. Rejects with the request's own error
   * (e.g. RequestExpiredError, AccessDeniedError, OwnerDeniedError) or a TimeoutError. While the
   * owner's approval is pending the wait lasts at least `approvalTimeoutMs`, and `authenticated`
   * counts only once approved. Rate limits (honouring Retry-After), 5xx answers and network
   * failures only delay the next poll.
   */
  async waitForCompletion(requestId: string, options: WaitOptions = {}): Promise<RequestStatus> {
    const { timeoutMs = 60_000, until = 'completed', signal, longPoll = true, approvalTimeoutMs = OWNER_APPROVAL_TIMEOUT_MS } = options;
    let deadline = Date.now() + timeoutMs;
    let lastFailure: unknown;
    let lastStatus: RequestStatus['status'] | undefined;
    let lastApproval: Approval | undefined;
    let reported: WaitStatus | undefined;
    const report = (status: WaitStatus) => {
      if (status !== reported) options.onStatus?.(status);
      reported = status;
    };
    for (let attempt = 0; ; attempt++) {
      let delay = pollDelay(attempt, options);
      const started = Date.now();
      try {
        // A hung connection must not outlive the deadline.
        const timeout = AbortSignal.timeout(Math.max(deadline - Date.now(), 1000));
        // Long polls only once a status has been seen: the server holds the answer while it lasts.
        const wait = longPoll && lastStatus ? Math.floor((deadline - Date.now()) / 1000) : 0;
        const state = await this.checkStatus(requestId, {
          wait,
          lastStatus,
          lastApproval,
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        // Time the server held the poll counts towards the interval: after a long poll, ask again at once.
        delay = Math.max(0, delay - (Date.now() - started));
        // An owner's denial is told by the answer itself (approval "denied"): OwnerDeniedError.
        if (state.status === 'error') throw errorFromBody(state, 200);
        lastStatus = state.status;
        if (state.approval === 'pending' && lastApproval !== 'pending') deadline = Math.max(deadline, Date.now() + approvalTimeoutMs);
        lastApproval = state.approval ?? lastApproval;
        report(state.approval === 'pending' ? 'waiting_for_owner_approval' : state.status);
        if (state.status === 'completed' || (until === 'authenticated' && state.status === 'authenticated' && state.approval !== 'pending')) {
          return state;
        }
        lastFailure = undefined;
      } catch (err) {
        if (signal?.aborted || !isTransient(err)) throw err;
        lastFailure = err;
        if (err instanceof RateLimitedError && err.retryAfter !== undefined) delay = Math.max(delay, err.retryAfter * 1000);
      }
      const remaining = deadline - Date.now();
      // Never poll earlier than Retry-After allows: if that is past the deadline, stop now.
      if (remaining <= 0 || (lastFailure instanceof RateLimitedError && delay > remaining)) {
        const waited = lastApproval === 'pending' ? ', still waiting for its owner to approve it' : '';
        throw new TimeoutError(`request ${requestId} did not become ${until} in time${waited}`, { cause: lastFailure });
      }
      await sleep(Math.min(delay, remaining), signal);
    }
  }

  /**
   * The whole sign-in for a browser the agent drives: reads the request id from the authorization
   * page (only on this server's origin), authenticates (only for `expectedWebsite`, when given), and
   * waits for the sign-in to finish, through the owner's approval when it is asked (see
   * `approvalTimeoutMs`, `onStatus`). Someone else authenticating the page's sign-in first is
   * reported as PossibleHijackError.
   */
  async signIn(page: PageLike, options: SignInOptions = {}): Promise<{ requestId: string } & RequestStatus> {
    const { signal, pageTimeoutMs, timeoutMs = 60_000 } = options;
    const expected = options.expectedWebsite === undefined ? undefined : new URL(options.expectedWebsite).origin;
    const requestId = await readRequestId(page, { expectedOrigin: new URL(this.baseUrl).origin, timeoutMs: pageTimeoutMs, signal });
    const deadline = Date.now() + timeoutMs;
    let answer: Authenticated;
    for (;;) {
      try {
        answer = await this.authenticate(requestId, { signal, expectedRedirectOrigin: expected });
        break;
      } catch (err) {
        // This agent's own repeat is answered 200: a 409 here means another agent came first.
        if (err instanceof RequestAlreadyAuthenticatedError) throw new PossibleHijackError(requestId, err);
        const wait = err instanceof RateLimitedError && err.retryAfter !== undefined ? err.retryAfter * 1000 : undefined;
        if (wait === undefined || Date.now() + wait > deadline) throw err;
        await sleep(wait, signal);
      }
    }
    // The server checks expected_redirect_origin itself; this catches one that ignored it.
    if (expected && answer.redirect_origin !== expected) {
      throw new WrongWebsiteError('redirect_origin_mismatch', `sign-in ${requestId} is for ${answer.redirect_origin}, not ${expected}`);
    }
    const state = await this.waitForCompletion(requestId, { ...options, timeoutMs: Math.max(deadline - Date.now(), 0) });
    return { requestId, ...state };
  }

  /**
   * The whole sign-in with no browser: the client is the browser too. It opens `authorizationUrl`
   * (this server's /authorize, as an OAuth client library builds it), keeps the binding cookie,
   * authenticates for the page's sign-in, waits (through the owner's approval when asked), and
   * loads /authorize/complete as the page would. Returns where that redirects, unfollowed: the
   * client's redirect URI with `code`, `state` and `iss`, or with `error` (see `authorizationResponse`).
   */
  async signInHeadless(authorizationUrl: string | URL, options: WaitOptions = {}): Promise<URL> {
    const { signal } = options;
    const url = new URL(authorizationUrl);
    if (url.origin !== new URL(this.baseUrl).origin) throw new TypeError(`the authorization URL is not on ${this.baseUrl}`);
    const page = await this.#fetch(url, { redirect: 'manual', headers: { accept: 'text/html' }, signal });
    const html = await page.text();
    // /authorize refuses some requests by redirecting to the client with `error` (RFC 6749 §4.1.2.1).
    const early = redirectOf(page, url);
    if (early) return early;
    if (!page.ok) {
      const code = /id="error-code">([^<]+)</.exec(html)?.[1] ?? SIGN_IN_ERRORS.serverError;
      throw new AgentAuthError(code, `the authorization page answered ${page.status}`, page.status);
    }
    const cookie = cookiesOf(page);
    const { requestId } = await this.signIn(
      { content: async () => html, url: () => url.href },
      { ...options, until: 'authenticated', pageTimeoutMs: 0 },
    );
    const done = await this.#fetch(`${this.baseUrl}/authorize/complete?request_id=${encodeURIComponent(requestId)}`, {
      redirect: 'manual',
      headers: { cookie },
      signal,
    });
    await done.body?.cancel();
    const redirect = redirectOf(done, url);
    if (!redirect) throw new AgentAuthError(SIGN_IN_ERRORS.serverError, `/authorize/complete answered ${done.status}, not a redirect`, done.status);
    return redirect;
  }

  /** The agent's id at the server. */
  get agentId(): string {
    return this.#agentId;
  }

  /** Whether this agent proves itself with a key (a private key or a signer) rather than a secret. */
  get hasKey(): boolean {
    return this.#agentSecret === undefined;
  }

  /**
   * A `private_key_jwt` client assertion (RFC 7523) signed with the agent's key, for the agent as
   * the OAuth client `clientId` (its client-metadata URL); the audience is this server's issuer.
   */
  async clientAssertion(clientId: string): Promise<string> {
    if (!this.hasKey) throw new TypeError('a client assertion needs the agent to sign with a key, not a secret');
    return createClientAssertion(await this.#key(), { clientId, audience: this.baseUrl });
  }

  /** What proves the agent's identity in an authenticate call: its secret, or an assertion signed for this request alone. */
  async #proof(requestId: string): Promise<{ agent_secret: string } | { agent_assertion: string }> {
    if (this.#agentSecret !== undefined) return { agent_secret: this.#agentSecret };
    return { agent_assertion: await createAssertion(await this.#key(), { agentId: this.#agentId, issuer: this.baseUrl, requestId }) };
  }

  async #call<T>(path: string, init: RequestInit): Promise<T> {
    const res = await this.#fetch(`${this.baseUrl}${path}`, {
      ...init,
      headers: { accept: 'application/json', ...init.headers },
    });
    const body: unknown = await res.json().catch(() => undefined);
    const json = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
    if (res.ok && json) return json as T;
    if (json && typeof json.error === 'string') {
      throw errorFromBody(json, res.status, parseRetryAfter(res.headers.get('retry-after')));
    }
    throw new AgentAuthError(SIGN_IN_ERRORS.serverError, `unexpected ${res.status} response from ${path.split('?')[0]}`, res.status);
  }
}
