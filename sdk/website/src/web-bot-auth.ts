import { createHash, createPublicKey, type KeyObject, verify as verifySignature } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Component,
  contentDigest,
  type MessageParts,
  type ParsedSignatureInput,
  parseSignature,
  parseSignatureInput,
  parseStringField,
  signatureBase,
  WEB_BOT_AUTH,
} from '@agent-auth/agent/http-signatures';

/**
 * Signed agent requests, the website's side (docs/protocol.md in the agent-auth repository, "Signed
 * agent requests"): check a request's Web Bot Auth signature (RFC 9421) against the key directory of
 * an agent-auth server the website trusts, then learn which agent signed it.
 */

/** Why a request is not taken as signed by an agent. */
export type WebBotAuthRefusal =
  /** No `Signature` and `Signature-Input`. */
  | 'missing_signature'
  /** The fields do not parse, or lack `created`, `expires` or `keyid`, or name another algorithm. */
  | 'malformed_signature'
  /** No signature with `tag="web-bot-auth"`. */
  | 'wrong_tag'
  /** `expires` has passed. */
  | 'expired'
  /** `created` is in the future. */
  | 'not_yet_valid'
  /** The signature does not cover `@authority`, or `signature-agent` when the header is sent. */
  | 'missing_components'
  /** The request is for another host than the website's (`authorities`). */
  | 'wrong_authority'
  /** `Signature-Agent` names a server the website does not trust. */
  | 'untrusted_directory'
  /** The trusted directory could not be read, or its own signature does not hold. */
  | 'directory_unavailable'
  /** No trusted directory lists the key, or no agent holds it. */
  | 'unknown_key'
  /** The signature does not verify: a changed request, another host, another key. */
  | 'bad_signature'
  /** The key's agent is deactivated. */
  | 'agent_inactive';

/** The agent that signed a request, as its agent-auth server describes it (never its owner's email). */
export interface SignedAgent {
  agent_id: string;
  name: string | null;
  owner_email_verified: boolean;
  active: boolean;
  /** The agent-auth server whose directory holds the key. */
  issuer: string;
  /** The key's RFC 7638 thumbprint. */
  keyid: string;
}

export type WebBotAuthResult = { ok: true; agent: SignedAgent } | { ok: false; reason: WebBotAuthRefusal; description: string };

export interface WebBotAuthOptions {
  /** The agent-auth servers (their ISSUER) whose directories are trusted; keys are fetched from these only. */
  trustedIssuers: string[];
  /** The hosts (`@authority`: host, and port unless the default) requests must be for; unset, any. */
  authorities?: string[];
  /** Clock skew allowed on `created` and `expires`, in seconds (default 10). */
  clockSkewSeconds?: number;
  /** The longest a directory or lookup answer is kept, whatever its `max-age` (default 300 s). */
  maxCacheSeconds?: number;
  /** A key missing from a cached directory refetches it, at most this often (default 5 s). */
  refreshUnknownAfterSeconds?: number;
  fetch?: typeof fetch;
}

/** A request as the verifier needs it: an absolute URL, its method and its header fields. */
export type SignedRequestParts = MessageParts;

interface Cached<T> {
  value: Promise<T>;
  until: number;
  fetchedAt: number;
}

interface Directory {
  keys: Map<string, KeyObject>;
}

class Refused extends Error {
  constructor(
    readonly reason: WebBotAuthRefusal,
    description: string,
  ) {
    super(description);
  }
}

const originOf = (value: string) => new URL(value).origin;
const maxAgeOf = (response: Response) => Number(/(?:^|,)\s*max-age=(\d+)/i.exec(response.headers.get('cache-control') ?? '')?.[1] ?? 0);

/** The public key of an Ed25519 JWK and its RFC 7638 thumbprint; undefined for anything else. */
function ed25519Key(jwk: unknown): [string, KeyObject] | undefined {
  if (typeof jwk !== 'object' || jwk === null) return undefined;
  const { kty, crv, x } = jwk as Record<string, unknown>;
  if (kty !== 'OKP' || crv !== 'Ed25519' || typeof x !== 'string') return undefined;
  try {
    const key = createPublicKey({ key: { kty, crv, x }, format: 'jwk' });
    return [createHash('sha256').update(JSON.stringify({ crv, kty, x })).digest('base64url'), key];
  } catch {
    return undefined;
  }
}

/** The signature with Web Bot Auth's tag, or the reason there is none. */
function webBotAuthSignature(request: SignedRequestParts) {
  const inputField = request.header('signature-input');
  const signatureField = request.header('signature');
  if (!inputField || !signatureField) throw new Refused('missing_signature', 'the request has no Signature and Signature-Input');
  let inputs: ParsedSignatureInput[];
  let signatures: Map<string, Uint8Array>;
  try {
    inputs = parseSignatureInput(inputField);
    signatures = parseSignature(signatureField);
  } catch (err) {
    throw new Refused('malformed_signature', `Signature or Signature-Input: ${(err as Error).message}`);
  }
  const input = inputs.find((i) => i.params.tag === WEB_BOT_AUTH.tag);
  if (!input) throw new Refused('wrong_tag', `no signature has tag="${WEB_BOT_AUTH.tag}"`);
  const signature = signatures.get(input.label);
  const { created, expires, keyid, alg } = input.params;
  if (!signature || typeof created !== 'number' || typeof expires !== 'number' || typeof keyid !== 'string') {
    throw new Refused('malformed_signature', 'the signature lacks created, expires, keyid or its Signature value');
  }
  if (alg !== undefined && alg !== WEB_BOT_AUTH.algorithm) throw new Refused('malformed_signature', `alg must be ${WEB_BOT_AUTH.algorithm}`);
  return { input, signature, created, expires, keyid };
}

/**
 * A verifier for `options.trustedIssuers`: directories and lookups are cached for their `max-age`
 * (at most `maxCacheSeconds`), so a key withdrawn at the server stops passing within that time.
 */
export function webBotAuthVerifier(options: WebBotAuthOptions) {
  const trusted = new Set(options.trustedIssuers.map(originOf));
  const skew = options.clockSkewSeconds ?? 10;
  const maxCacheMs = (options.maxCacheSeconds ?? 300) * 1000;
  const refreshMs = (options.refreshUnknownAfterSeconds ?? 5) * 1000;
  const send = options.fetch ?? fetch;
  const directories = new Map<string, Cached<Directory>>();
  const lookups = new Map<string, Cached<Omit<SignedAgent, 'issuer' | 'keyid'> | undefined>>();

  /** A cached answer, fetched again once it is stale (or, with `refresh`, older than refreshMs); a failure is not kept. */
  function cached<T>(cache: Map<string, Cached<T>>, key: string, load: () => Promise<[T, number]>, refresh = false): Promise<T> {
    const now = Date.now();
    const entry = cache.get(key);
    if (entry && entry.until > now && !(refresh && now - entry.fetchedAt >= refreshMs)) return entry.value;
    const value = load().then(([result, maxAge]) => {
      cache.set(key, { value: Promise.resolve(result), until: Date.now() + Math.min(maxAge * 1000, maxCacheMs), fetchedAt: now });
      return result;
    });
    cache.set(key, { value, until: Infinity, fetchedAt: now });
    value.catch(() => cache.delete(key));
    return value;
  }

  /** The directory's keys by thumbprint, once its own signature (by a key it lists) holds for this URL and body. */
  async function loadDirectory(issuer: string): Promise<[Directory, number]> {
    const url = `${issuer}${WEB_BOT_AUTH.directoryPath}`;
    const response = await send(url, { redirect: 'error' });
    if (!response.ok) throw new Refused('directory_unavailable', `${url} answered ${response.status}`);
    const body = new Uint8Array(await response.arrayBuffer());
    const listed = (JSON.parse(new TextDecoder().decode(body)) as { keys?: unknown }).keys;
    const keys = new Map(Array.isArray(listed) ? listed.map(ed25519Key).filter((k) => k !== undefined) : []);
    const header = (name: string) => response.headers.get(name) ?? undefined;
    const input = parseSignatureInput(header('signature-input') ?? '').find((i) => i.params.tag === WEB_BOT_AUTH.directoryTag);
    const signature = input && parseSignature(header('signature') ?? '').get(input.label);
    const key = input && keys.get(String(input.params.keyid));
    const covers = (name: string) => input?.components.some((c) => c.name === name);
    const base =
      input &&
      covers('@authority') &&
      covers('content-digest') &&
      header('content-digest') === (await contentDigest(body)) &&
      signatureBase({ url, header }, input.components, input.input, { method: 'GET', url, header: () => undefined });
    if (!signature || !key || !base || !verifySignature(null, Buffer.from(base), key, signature)) {
      throw new Refused('directory_unavailable', `the response signature of ${url} does not hold`);
    }
    return [{ keys }, maxAgeOf(response)];
  }

  async function loadAgent(issuer: string, keyid: string): Promise<[Omit<SignedAgent, 'issuer' | 'keyid'> | undefined, number]> {
    const response = await send(`${issuer}${WEB_BOT_AUTH.lookupPath}${encodeURIComponent(keyid)}`, { redirect: 'error' });
    if (response.status === 404) return [undefined, 0];
    if (!response.ok) throw new Refused('directory_unavailable', `the lookup of ${keyid} at ${issuer} answered ${response.status}`);
    const { agent_id, name, owner_email_verified, active } = (await response.json()) as SignedAgent;
    return [{ agent_id, name, owner_email_verified, active }, maxAgeOf(response)];
  }

  /** The issuer whose directory to use: the trusted origin `Signature-Agent` names, or without it the one trusted issuer. */
  function issuerOf(request: SignedRequestParts): string {
    const field = request.header(WEB_BOT_AUTH.signatureAgentHeader);
    let origin: string;
    try {
      origin = field === undefined ? [...trusted][0] : originOf(parseStringField(field));
    } catch {
      throw new Refused('untrusted_directory', 'Signature-Agent is not a quoted URL');
    }
    if (!trusted.has(origin) || (field === undefined && trusted.size !== 1)) {
      throw new Refused('untrusted_directory', `${field ?? 'a request without Signature-Agent'} is not a trusted directory`);
    }
    return origin;
  }

  async function check(request: SignedRequestParts): Promise<SignedAgent> {
    const { input, signature, created, expires, keyid } = webBotAuthSignature(request);
    const now = Date.now() / 1000;
    if (expires < now - skew) throw new Refused('expired', 'the signature has expired');
    if (created > now + skew) throw new Refused('not_yet_valid', 'the signature was created in the future');
    const covered = (name: string) => input.components.some((c: Component) => c.name === name && !c.req);
    const agentHeader = request.header(WEB_BOT_AUTH.signatureAgentHeader) !== undefined;
    if (!covered('@authority') || (agentHeader && !covered(WEB_BOT_AUTH.signatureAgentHeader))) {
      throw new Refused('missing_components', `the signature must cover @authority${agentHeader ? ' and signature-agent' : ''}`);
    }
    const authority = new URL(request.url).host;
    if (options.authorities && !options.authorities.includes(authority)) throw new Refused('wrong_authority', `the request is for ${authority}`);
    const issuer = issuerOf(request);

    let key = (await cached(directories, issuer, () => loadDirectory(issuer))).keys.get(keyid);
    // A key added since the directory was read: read it again (at most every refreshUnknownAfterSeconds).
    key ??= (await cached(directories, issuer, () => loadDirectory(issuer), true)).keys.get(keyid);
    if (!key) throw new Refused('unknown_key', `the directory of ${issuer} does not list ${keyid}`);
    const base = signatureBase(request, input.components, input.input);
    if (!base || !verifySignature(null, Buffer.from(base), key, signature)) throw new Refused('bad_signature', 'the signature does not verify');

    const agent = await cached(lookups, `${issuer} ${keyid}`, () => loadAgent(issuer, keyid));
    if (!agent) throw new Refused('unknown_key', `no agent at ${issuer} holds ${keyid}`);
    if (!agent.active) throw new Refused('agent_inactive', `the agent ${agent.agent_id} is deactivated`);
    return { ...agent, issuer, keyid };
  }

  return {
    /** Verifies a request; never throws for the request's sake (a refusal names its reason). */
    async verify(request: Request | SignedRequestParts): Promise<WebBotAuthResult> {
      const parts: SignedRequestParts =
        request instanceof Request ? { method: request.method, url: request.url, header: (name) => request.headers.get(name) ?? undefined } : request;
      try {
        return { ok: true, agent: await check(parts) };
      } catch (err) {
        if (err instanceof Refused) return { ok: false, reason: err.reason, description: err.message };
        return { ok: false, reason: 'directory_unavailable', description: `the directory could not be read: ${(err as Error).message}` };
      }
    },
  };
}

type Verifier = ReturnType<typeof webBotAuthVerifier>;

/** Options of the middlewares: the verifier's, and whether an unsigned or refused request is turned away (401). */
export type WebBotAuthMiddlewareOptions = WebBotAuthOptions & { required?: boolean };

/** The result a middleware left on a request (Fastify's `request` or Node's `req`), typed without augmenting the framework's types. */
export const webBotAuthOf = (request: object): WebBotAuthResult | undefined => (request as { webBotAuth?: WebBotAuthResult }).webBotAuth;

const refusalBody = (result: Extract<WebBotAuthResult, { ok: false }>) => ({ error: result.reason, error_description: result.description });

/** A Node request's parts: the URL from its Host header (the authority the client signed for). */
function nodeRequestParts(request: IncomingMessage, protocol?: string): SignedRequestParts {
  const scheme = protocol ?? ((request.socket as { encrypted?: boolean } | undefined)?.encrypted ? 'https' : 'http');
  return {
    method: request.method ?? 'GET',
    url: new URL(request.url ?? '/', `${scheme}://${request.headers.host ?? 'invalid.invalid'}`).href,
    header: (name) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}

/**
 * A Fastify `preHandler` hook: `request.webBotAuth` holds the result; with `required`, a request
 * without a valid signature gets 401 `{error: <reason>, error_description}`.
 */
export function webBotAuthFastify(options: WebBotAuthMiddlewareOptions, verifier: Verifier = webBotAuthVerifier(options)) {
  return async (
    request: { raw: IncomingMessage; protocol: string; webBotAuth?: WebBotAuthResult },
    reply: { code(status: number): { send(body: unknown): unknown } },
  ) => {
    const result = await verifier.verify(nodeRequestParts(request.raw, request.protocol));
    request.webBotAuth = result;
    if (options.required && !result.ok) return reply.code(401).send(refusalBody(result));
  };
}

/**
 * Express (or plain Node) middleware: `req.webBotAuth` holds the result; with `required`, a request
 * without a valid signature gets 401 `{error: <reason>, error_description}`.
 */
export function webBotAuthExpress(options: WebBotAuthMiddlewareOptions, verifier: Verifier = webBotAuthVerifier(options)) {
  return (
    request: IncomingMessage & { protocol?: string; webBotAuth?: WebBotAuthResult },
    response: ServerResponse,
    next: (err?: unknown) => void,
  ) => {
    verifier.verify(nodeRequestParts(request, request.protocol)).then((result) => {
      request.webBotAuth = result;
      if (!options.required || result.ok) return next();
      response.statusCode = 401;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(refusalBody(result)));
    }, next);
  };
}
