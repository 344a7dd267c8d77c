import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_ADMIN_PORT, DEFAULT_DATA_DIR } from './defaults.js';
import { SIGNING_ALGS } from './protocol/signing.js';
import { transportProblem } from './protocol/transport.js';

const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().int().min(1);
// A request count per window; 0 switches that limit off.
const count = z.coerce.number().int().min(0);
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
const secret = z.string().refine((s) => Buffer.byteLength(s) >= 32, 'must be at least 32 bytes');

export type TrustProxy = boolean | number | string[];

// Named ranges that Fastify's trustProxy (proxy-addr) understands besides addresses and CIDRs.
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** TRUST_PROXY: true/false, a hop count, or a comma-separated list of addresses, CIDRs and named ranges. */
function parseTrustProxy(value: string): TrustProxy {
  if (/^(true|yes)$/i.test(value)) return true;
  if (/^(false|no)$/i.test(value)) return false;
  if (/^\d+$/.test(value)) return Number(value) || false;
  return value.split(',').map((entry) => entry.trim());
}

function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGES.has(entry)) return true;
  const [address, bits, extra] = entry.split('/');
  const family = isIP(address);
  const maxBits = family === 4 ? 32 : 128;
  return family !== 0 && extra === undefined && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits));
}

/** What the README's and docs/operations.md's tables say of a variable (`npm run docs:config` writes them). */
export type VariableDoc = {
  /** The README's line: what the variable is for. */
  title: string;
  /** docs/operations.md's text: the whole of it. */
  description: string;
  /** The default as the tables show it, when it is not the schema's (derived, or generated). */
  shownDefault?: string;
  /** Its table in docs/operations.md: the main one, or the branding one. */
  section?: 'branding';
};

/** TRUST_PROXY and ADMIN_TRUST_PROXY. */
const trustProxy = z.string().transform((v, ctx) => {
  const trusted = parseTrustProxy(v);
  const bad = Array.isArray(trusted) ? trusted.find((entry) => !isProxyAddress(entry)) : undefined;
  if (bad !== undefined)
    ctx.addIssue({ code: 'custom', message: `must be true, false, a hop count or a comma-separated list of addresses/CIDRs ("${bad}" is none)` });
  return trusted;
});

const about = (title: string, description = title, more: Pick<VariableDoc, 'shownDefault' | 'section'> = {}): VariableDoc => ({
  title,
  description,
  ...more,
});

const envSchema = z.object({
  PORT: port.default(3000).meta(about('Port of the public listener.')),
  HOST: z.string().min(1).default('0.0.0.0').meta(about('Address of the public listener.', 'Address the public listener binds.')),
  ISSUER: z
    .url({ protocol: /^https?$/ })
    .refine((u) => !u.endsWith('/'), 'must not end with a slash')
    .superRefine((u, ctx) => {
      const problem = transportProblem(new URL(u));
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional()
    .meta(
      about(
        'Public base URL, no trailing slash (metadata, token `iss`, redirects); `https`, or `http` on localhost only.',
        'Public base URL of the server, without a trailing slash. It appears in the metadata, as `iss` in tokens and in redirects; behind a proxy or load balancer it is the URL clients use.',
        { shownDefault: '`http://localhost:$PORT`' },
      ),
    ),
  DATABASE_URL: z
    .url({ protocol: /^postgres(ql)?$/ })
    .optional()
    .meta(
      about(
        '`postgres://…`: keep state in PostgreSQL instead of the embedded store.',
        '`postgres://user:password@host:5432/db`. When set, state lives in that PostgreSQL.',
      ),
    ),
  DATABASE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(500)
    .max(60_000)
    .default(1500)
    .meta(
      about(
        'How long one PostgreSQL call may take, the wait for a pooled connection included, before the request gets 503; after one timeout, 503 at once until the database answers again.',
        'How long the server waits for one call to PostgreSQL, the wait for a pooled connection and the answer together, before the request gets 503 with `Retry-After`: the default keeps every answer of the hot paths under 2 s. The database itself gives up on a statement 0.5 s before that; a statement that first waited for a connection may therefore commit after its request was told 503, which the hot writes allow for (see "Failure modes"). After one timeout the calls waiting and every new one get 503 at once, instead of queueing behind a database that does not answer, until a probe (one a second) answers in time. Migrations are not bounded.',
      ),
    ),
  DATA_DIR: z
    .string()
    .min(1)
    .default(DEFAULT_DATA_DIR)
    .meta(
      about(
        'Embedded store (`$DATA_DIR/pglite`) and generated admin token; `memory` keeps the store in memory (then `ADMIN_TOKEN` must be set).',
        'Without `DATABASE_URL`, the embedded database lives in `$DATA_DIR/pglite`; `memory` keeps it in memory (lost at exit). The generated admin token is kept here in any case (see `ADMIN_TOKEN`); with `memory`, `ADMIN_TOKEN` must be set.',
      ),
    ),
  DATA_DIR_MIN_FREE_MB: count
    .default(64)
    .meta(
      about(
        'Free space (MB) the disk of `DATA_DIR` must have for the embedded store to start.',
        'With the embedded store, the server refuses to start, with one line saying how much is free and how much is needed, when the filesystem that holds `DATA_DIR` has less than this many megabytes free: a new store takes about 40 MB, and an existing one needs room for its write-ahead log (16 MB segments). `0` turns the check off.',
      ),
    ),
  DATA_DIR_LOW_FREE_MB: count
    .default(256)
    .meta(
      about(
        'Free space (MB) of `DATA_DIR` below which a running server warns.',
        'With the embedded store, the free space of the disk that holds `DATA_DIR` is checked every 30 s and exported as the gauge `agent_auth_data_dir_free_bytes`; when it falls below this many megabytes, a warning is logged (once, and again after it has recovered), before the disk fills and writes fail with 503.',
      ),
    ),
  JWT_SECRET: secret
    .optional()
    .meta(
      about(
        'HS256 signing secret, at least 32 bytes; unset, one is generated and kept in the store.',
        'HS256 secret that signs access tokens, at least 32 bytes (`openssl rand -base64 48`). Unset (and `JWT_SECRETS` unset): the server generates one on first start and keeps it in the database, so tokens survive restarts and replicas share it.',
        { shownDefault: 'unset (generated)' },
      ),
    ),
  JWT_SECRETS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    )
    .pipe(z.array(secret).min(1, 'must name at least one secret'))
    .optional()
    .meta(
      about(
        'Several secrets for rotation, comma-separated, newest first (instead of `JWT_SECRET`).',
        'Several secrets for rotation, comma-separated, newest first: the first signs, all verify. Set this or `JWT_SECRET`, not both.',
      ),
    ),
  AUTH_REQUEST_TTL_SECONDS: seconds
    .max(600)
    .default(600)
    .meta(about('Lifetime of an authorization request (at most 600).', 'Lifetime of an authorization request (the sign-in page), at most 600.')),
  AUTH_CODE_TTL_SECONDS: seconds
    .max(600)
    .default(600)
    .meta(about('Lifetime of an authorization code (at most 600).', 'Lifetime of an authorization code, at most 600.')),
  ACCESS_TOKEN_TTL_SECONDS: seconds
    .max(3600)
    .default(3600)
    .meta(about('Lifetime of an access token (at most 3600).', 'Lifetime of an access token, at most 3600.')),
  RESOURCE_ACCESS_TOKEN_TTL_SECONDS: seconds
    .max(3600)
    .default(300)
    .meta(
      about(
        'Lifetime of an access token for a resource (an MCP server; at most 3600).',
        'Lifetime of an access token issued for a registered resource (an MCP server or another API, docs/protocol.md "Resources"), ' +
          'at most 3600. Resources verify these JWTs on their own, without asking the server, so this bounds how long a revoked ' +
          'grant or a kill switch may go unnoticed by a resource that does not introspect.',
      ),
    ),
  REFRESH_TOKEN_TTL_SECONDS: seconds.default(2592000).meta(about('Lifetime of a refresh token (30 days).')),
  ID_TOKEN_SIGNING_ALG: z
    .enum(SIGNING_ALGS)
    .optional()
    .meta(
      about(
        '`RS256`, `ES256` or `EdDSA`: OpenID Connect mode (see [OpenID Connect](#openid-connect-opt-in)).',
        '`RS256`, `ES256` or `EdDSA` (Ed25519): OpenID Connect mode, with ID tokens signed by a key pair the server keeps in the database (see [ID token signing keys](#id-token-signing-keys)). Unset: no ID tokens, an empty JWKS.',
      ),
    ),
  LOGOUT_ALLOW_PRIVATE_NETWORKS: bool
    .default(false)
    .meta(
      about(
        "`true`: back-channel logout URIs may be on private, shared or unique-local addresses (websites on the deployment's own network).",
        '`true`: a `backchannel_logout_uri` may be on, or resolve to, a private (10/8, 172.16/12, 192.168/16), shared (100.64/10) or unique-local (fc00::/7) address, IPv4-mapped forms included: for a deployment whose websites live on its own network. `false`: such a URI is refused at registration (400 `invalid_client_metadata`) and at every delivery, after its host is resolved, as link-local and metadata addresses always are.',
      ),
    ),
  ADMIN_PORT: port.default(DEFAULT_ADMIN_PORT).meta(about('Port of the admin listener.')),
  ADMIN_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .meta(about('Address of the admin listener; keep it private.', 'Address the admin listener binds.')),
  ADMIN_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .meta(
      about(
        'Bearer token of the admin API, at least 16 characters.',
        'Bearer token for the admin API, at least 16 characters. Unset: one token per deployment. The first instance on a database generates it, writes it to `$DATA_DIR/admin-token` (mode 0600), where the `agent-auth` CLI on the same machine finds it, and keeps its SHA-256 digest in the database, so every instance on that database accepts it (see [The admin token](#the-admin-token)).',
        { shownDefault: 'unset (generated)' },
      ),
    ),
  DYNAMIC_REGISTRATION: z
    .enum(['open', 'off'])
    .default('open')
    .meta(
      about(
        '`open`: MCP clients may register themselves at `POST /register` (public clients); `off`: refused.',
        '`open`: MCP clients may register themselves at `POST /register` (RFC 7591; public clients only, limited per address by ' +
          '`RATE_LIMIT_REGISTER_PER_IP`); `off`: the endpoint refuses every registration and the metadata no longer lists it. ' +
          'Clients that use Client ID Metadata Documents need no registration either way.',
      ),
    ),
  DYNAMIC_REGISTRATION_UNUSED_TTL_SECONDS: seconds
    .default(86400)
    .meta(
      about(
        'A dynamic registration that starts no sign-in within this time is purged (1 day).',
        'A dynamic registration (`POST /register`) that has started no sign-in within this many seconds is deleted by the purge job.',
      ),
    ),
  REQUIRE_APPROVAL: bool
    .default(false)
    .meta(
      about(
        '`true`: the user approves or denies each sign-in instead of automatic approval.',
        '`true`: the sign-in page asks the user to approve or deny each request instead of approving automatically.',
      ),
    ),
  SMTP_URL: z
    .url({ protocol: /^smtps?$/ })
    .optional()
    .meta(
      about(
        '`smtp://[user:pass@]host:port` or `smtps://…`: where mail to owners goes (sign-in links, notices); unset, messages go to the log.',
        '`smtp://[user:pass@]host:port` (STARTTLS when the server offers it) or `smtps://…` (TLS from the start): the server that sends mail to owners, their sign-in links and notices. Unset: each message, links included, is written to the log instead, for development only; the start banner says so (see [Mail](#mail)).',
      ),
    ),
  MAIL_FROM: z
    .string()
    .trim()
    .min(3)
    .max(320)
    .optional()
    .meta(
      about('Sender of mail to owners.', 'The `From` of mail to owners, e.g. `Agent Auth <no-reply@auth.example.com>`.', {
        shownDefault: "`$BRAND_NAME <no-reply@` the issuer's host `>`",
      }),
    ),
  OWNER_SIGNUP: bool
    .default(true)
    .meta(
      about(
        '`false`: only addresses an operator registered (with an agent) may sign in to `/account`; `true`: any address becomes an owner when its sign-in link is used.',
        '`true`: an address no one owns yet becomes an owner when its sign-in link is used. `false`: only owners that exist (an operator registered an agent for them) can sign in to `/account`; the answer to asking for a link is the same either way.',
      ),
    ),
  OWNER_AGENT_CREATION: bool
    .default(true)
    .meta(
      about(
        '`false`: owners cannot create agents in `/account` (403 `forbidden`); operators still can.',
        '`true`: owners create their own agents in `/account`. `false`: only operators do (admin API, console, CLI); the owner API answers 403 `forbidden`.',
      ),
    ),
  OWNER_FRESH_SECONDS: seconds
    .max(3600)
    .default(300)
    .meta(
      about(
        'How long a sign-in (or a passkey confirmation) of an owner counts as fresh: approving without a passkey, changing the email, and every change that weakens the owner’s protection need one this recent.',
        'An owner session is fresh while its last user verification (an email-link sign-in, a passkey sign-in, or a confirmation with the passkey at `POST /account/api/reauthenticate`) is younger than this many seconds. Approving a sign-in without a passkey, moving the account to another email, and every change that weakens the owner’s protection (adding or removing a passkey, lowering an approval policy, adding an agent key, turning notices off) need a fresh session, else 403 `fresh_authentication_required`. At most 3600. See docs/security.md.',
      ),
    ),
  APPROVAL_MAIL_INTERVAL_SECONDS: seconds
    .max(3600)
    .default(60)
    .meta(
      about(
        'At most one approval mail per owner in this many seconds; sign-ins that start meanwhile wait in `/account/approvals`.',
        'An owner is mailed at most once in this many seconds when sign-ins of their agents wait for their approval (claimed in the store, so across instances). Sign-ins that start meanwhile wait in `/account/approvals`; once the interval is over, one more mail tells of those still waiting. At most 3600.',
      ),
    ),
  REQUIRE_VERIFIED_EMAIL: bool
    .default(false)
    .meta(
      about(
        '`true`: an agent whose owner has not verified their email (by using a sign-in link) cannot sign in where the scope shares the email (403 `email_not_verified`).',
        "`true`: when a sign-in's scope would share the owner's email, the agent's authenticate is refused with 403 `email_not_verified` until the owner has used a sign-in link sent to that address. `false`: the email is shared either way and ID tokens say whether it was verified (`email_verified`).",
      ),
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .meta(about('`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.')),
  PURGE_INTERVAL_SECONDS: seconds.default(300).meta(about('How often expired requests, codes and tokens are deleted.')),
  REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(30)
    .meta(
      about(
        'A client may retry a refresh whose answer it lost, with the same token, this long (its unused successor is discarded); `0` = every reuse revokes the grant.',
        'A refresh token presented again at most this many seconds after it was spent, while its successor was never used, is a retry whose answer was lost: it gets a new pair and the unused successor is discarded. Anything else presented twice revokes the grant. `0` switches this off (every reuse revokes); at most 300. See docs/security.md.',
      ),
    ),
  SHUTDOWN_DELAY_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(120)
    .default(0)
    .meta(
      about(
        'On SIGTERM, `/readyz` answers 503 and the server keeps serving this long before it drains.',
        'On `SIGTERM`, how long `/readyz` answers 503 while the server keeps serving, before it drains and stops (at most 120). See "Graceful shutdown".',
        { shownDefault: '`0` (`5` in the image)' },
      ),
    ),
  AUDIT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .default(365)
    .meta(about('How long audit events, and grants after they end (the sign-in history), are kept before the purge deletes them.')),
  AUDIT_RETENTION_WITHOUT_AGENT_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .default(2)
    .meta(
      about('How long the audit events of sign-ins that never reached an agent are kept (anyone can start one; at most `AUDIT_RETENTION_DAYS`).'),
    ),
  GRANT_CACHE_SIZE: count
    .max(1_000_000)
    .default(10_000)
    .meta(
      about(
        'Grants, clients, agents and verified access tokens each instance keeps in memory for `/userinfo`, `/introspect` and the sign-in (revocation still immediate; `0` = off; docs/operations.md, "Grant cache").',
        'Grants (and as many clients, agents and verified access tokens) each instance keeps in memory for `/userinfo`, `/introspect` and the sign-in; `0` switches the cache off. See [Grant cache](#grant-cache).',
      ),
    ),
  GRANT_CACHE_MAX_AGE_SECONDS: seconds
    .max(10)
    .default(10)
    .meta(
      about(
        'Longest time a cached grant or client is served from memory, whatever happens to the notifications (at most 10).',
        'Longest time an instance serves a cached grant or client from memory before reading it again, at most 10. Notifications make revocation immediate; this bounds what a failure that loses them unnoticed could cost (see [Grant cache](#grant-cache)).',
      ),
    ),
  SIGNING_KEYS_MAX_AGE_SECONDS: seconds
    .max(3600)
    .default(60)
    .meta(
      about(
        'How long websites may cache the request-signing key directory and key lookups (`Cache-Control: max-age`); a revoked key may work that long.',
        'The `max-age` of `/.well-known/http-message-signatures-directory` and `/api/agents/by-signing-key/:kid`, at most 3600: a website keeps their answers this long, so a deactivated or kill-switched agent\'s signed requests pass at most this long after the switch (docs/protocol.md, "Signed agent requests").',
      ),
    ),
  DPOP_NONCE: z
    .enum(['off', 'on'])
    .default('off')
    .meta(
      about(
        '`on`: every DPoP proof at `/token` and `/userinfo` must carry a server nonce (`use_dpop_nonce` hands one out); `off`: only those of websites registered with `dpop_nonce_required`.',
        '`on`: every DPoP proof (RFC 9449) at `/token` and `/userinfo` must carry a nonce this server issued (§8, §9): a proof without one, or with an old one, is refused with `use_dpop_nonce` and a fresh nonce in the `DPoP-Nonce` header, which clients such as openid-client retry with on their own. Nonces are derived from a secret every instance reads from the store and change every 5 minutes, so a proof signed in advance is useless. `off`: only websites registered with `dpop_nonce_required` demand them (at `/token`, and at `/userinfo` for their tokens); the others\' proofs are checked by their `iat` alone. See docs/protocol.md, "DPoP".',
      ),
    ),
  TRUST_PROXY: trustProxy
    .default(false)
    .meta(
      about(
        'Which proxies to believe about the client address (`X-Forwarded-For`), scheme and host: `true` (any: only if the proxy overwrites the header), a hop count such as `1` (the proxy in front of us appends; its entry counts), or a comma-separated list of proxy addresses/CIDRs (`10.0.0.0/8,127.0.0.1`).',
        "Which proxies to believe about the client address, scheme and host (`X-Forwarded-For`, `-Proto`, `-Host`). `true`: any, so only when the proxy in front *overwrites* these headers (the compose `scale` profile's nginx does). A hop count, e.g. `1`: that many proxies in front, each *appending* to `X-Forwarded-For` (most cloud load balancers): the last entry is the client's, whatever the client prepended; the server must then be reachable only through them. A comma-separated list of proxy addresses, CIDRs or `loopback`/`linklocal`/`uniquelocal`: entries are believed while they come from these. Otherwise a client can pick the address that rate limits count.",
      ),
    ),
  ADMIN_TRUST_PROXY: trustProxy
    .default(false)
    .meta(
      about(
        'Like `TRUST_PROXY`, for the admin listener (which ignores `TRUST_PROXY`).',
        'Like `TRUST_PROXY`, for the admin listener only, which does not follow `TRUST_PROXY`: it is reached directly or through a proxy of its own, and believing a header there would let a caller pick the address that the admin failure budget counts. Set it only when the admin listener is reached through a proxy that overwrites or appends `X-Forwarded-For`.',
      ),
    ),
  REDIS_URL: z
    .url({ protocol: /^rediss?$/ })
    .optional()
    .meta(
      about(
        '`redis://…`: share rate-limit counters between instances.',
        '`redis://` or `rediss://` URL. When set, rate-limit counters live in Redis and are shared by every instance; otherwise each process counts on its own. Should Redis fail or hang, requests are let through (see "Rate limits and Redis").',
      ),
    ),
  REDIS_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(10_000)
    .default(300)
    .meta(
      about(
        'Connect and command timeout for Redis; past it, limits fail open (docs/operations.md, "Rate limits and Redis").',
        'How long a Redis connect or command may take before limits fail open.',
      ),
    ),
  REQUEST_TIMEOUT_SECONDS: seconds
    .max(600)
    .default(30)
    .meta(
      about(
        'A request whose headers and body have not all arrived after this long gets 408 and its connection closed.',
        'How long a client may take to send a whole request, headers and body; past it, 408 and the connection is closed (checked every second). Responses, long polls included, are not bounded by it. See "Slow clients".',
      ),
    ),
  HEADERS_TIMEOUT_SECONDS: seconds
    .max(600)
    .default(10)
    .meta(
      about(
        'A request whose headers have not all arrived after this long gets 408 and its connection closed.',
        'How long a client may take to send the request line and headers; past it, 408 and the connection is closed. Must not exceed `REQUEST_TIMEOUT_SECONDS`. See "Slow clients".',
      ),
    ),
  MAX_CONNECTIONS_PER_IP: count
    .default(100)
    .meta(
      about(
        'Open connections per client address on each listener (an IPv6 /64 counts as one); the proxies `TRUST_PROXY` trusts are exempt (`0` = no cap).',
        'Open connections per client address on each listener, an IPv6 /64 counting as one; a connection past it is closed at once. The addresses of proxies that `TRUST_PROXY` (on the admin listener `ADMIN_TRUST_PROXY`) trusts are exempt, since every client behind them shares their address; with `true` or a hop count every peer is taken for a proxy and nothing is capped here (cap connections at the proxy then). `0` switches the cap off. See "Slow clients".',
      ),
    ),
  RATE_LIMIT_WINDOW_SECONDS: seconds.default(60).meta(about('Rate-limit window.', 'Length of the rate-limit window.')),
  RATE_LIMIT_AUTHORIZE_PER_IP: count
    .default(120)
    .meta(about('`GET /authorize` per client IP per window (`0` = off, as for every limit).', '`GET /authorize` requests per client IP per window.')),
  RATE_LIMIT_REGISTER_PER_IP: count.default(10).meta(about('`POST /register` (dynamic client registration) per client IP per window.')),
  RATE_LIMIT_CHECK_STATUS_PER_IP: count
    .default(600)
    .meta(about('`GET /api/check-status` per client IP per window.', '`GET /api/check-status` requests per client IP per window.')),
  RATE_LIMIT_AUTHENTICATE_PER_IP: count
    .default(60)
    .meta(
      about(
        'Failed `POST /api/agent/authenticate` calls per client address per window.',
        'Failed `POST /api/agent/authenticate` calls (any refusal) per client address per window.',
      ),
    ),
  RATE_LIMIT_AUTHENTICATE_PER_AGENT: count
    .default(20)
    .meta(
      about(
        'Failed authenticates per agent id and client address per window (docs/security.md, "Rate limits").',
        'Failed agent authentications (unknown agent, wrong secret, inactive) per agent id and client address per window. Failures elsewhere never lock an agent out (docs/security.md, "Rate limits").',
      ),
    ),
  RATE_LIMIT_CLIENT_PER_CLIENT: count
    .default(0)
    .meta(
      about(
        "Authenticated calls to `/token`, `/introspect` and `/revoke` together per client per window, on each instance; a website's own traffic is not limited unless this is set (at least 6000 is advised).",
        "Authenticated calls to `/token`, `/introspect` and `/revoke` together per client per window, counted by each instance (it guards the instance's capacity; no Redis command per call). Only calls with the client's secret count. Off by default; at least 6000 is advised when set.",
        { shownDefault: '`0` (off)' },
      ),
    ),
  RATE_LIMIT_CLIENT_FAILURES_PER_IP: count
    .default(300)
    .meta(
      about(
        'Failed (unauthenticated) calls to those endpoints per client address per window.',
        'Failed calls to those endpoints (refused before the client authenticated) per client address per window.',
      ),
    ),
  RATE_LIMIT_EMAIL_LINK_PER_IP: count.default(10).meta(about('Sign-in links asked for (`POST /account/email-link`) per client address per window.')),
  RATE_LIMIT_EMAIL_LINK_PER_EMAIL: count
    .default(5)
    .meta(
      about(
        'Sign-in links sent to one address per hour, counted in the database (every instance); past it, more only once no link sent is usable.',
        'Sign-in links sent to one email address per hour, counted in the database so that every instance shares the count. Past it, asking for another answers 429 with `Retry-After` while a link already sent is still usable (unused, under 15 minutes old), so nobody can keep the owner out; once none is, one more link may go out.',
      ),
    ),
  RATE_LIMIT_PASSKEY_SIGN_IN_PER_IP: count
    .default(30)
    .meta(
      about(
        'Passkey sign-in calls (`/account/passkey/options` and `/sign-in`) per client address per window.',
        'Calls to `POST /account/passkey/options` and `POST /account/passkey/sign-in` per client address per window: each issues or spends a challenge kept in the store, before anyone is signed in.',
      ),
    ),
  RATE_LIMIT_ADMIN_FAILURES_PER_IP: count
    .default(10)
    .meta(
      about(
        'Failed admin authentications (admin API token, console sign-in) per client address per window.',
        'Failed admin authentications per client address per window, the admin API (a wrong or missing bearer token) and the console sign-in counted together; past it, 429 with `Retry-After`. The right token from another address is still accepted.',
      ),
    ),
  RATE_LIMIT_CLIENT_FAILURES_PER_CLIENT: count.default(20).meta(about('Failed client authentications per client id and client address per window.')),
  BRAND_NAME: z
    .string()
    .trim()
    .min(1)
    .max(60)
    .default('agent-auth')
    .meta(
      about('The product name the sign-in pages and the console show.', 'The product name the pages show (at most 60 characters).', {
        section: 'branding',
      }),
    ),
  BRAND_LOGO_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .meta(
      about(
        'An image URL shown beside the name.',
        "An `https` (or `http`) image URL shown beside the name; its origin is added to the pages' `img-src`.",
        { section: 'branding' },
      ),
    ),
  BRAND_LOGO_FILE: z
    .string()
    .regex(/\.(png|svg|jpe?g|webp|gif)$/i, 'must name a .png, .svg, .jpg, .webp or .gif file')
    .optional()
    .meta(
      about(
        'Instead of a URL: an image file served by both listeners.',
        'Instead of a URL: a `.png`, `.svg`, `.jpg`, `.webp` or `.gif` file read at start and served by both listeners at `/assets/logo` (`/console/assets/logo`).',
        { section: 'branding' },
      ),
    ),
  BRAND_ACCENT_COLOR: z
    .string()
    .regex(/^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i, 'must be a hex colour such as #1f6feb')
    .default('#1f6feb')
    .meta(
      about(
        'Hex colour of buttons and highlights.',
        'Hex colour (`#rgb` or `#rrggbb`) of buttons and highlights; the text on it turns black or white, whichever contrasts more.',
        { section: 'branding' },
      ),
    ),
});

export type Env = z.input<typeof envSchema>;

export class ConfigError extends Error {}

/** The settings, named for the code that reads them; their meaning is in the README's table. */
function settingsFrom(e: z.output<typeof envSchema>) {
  if (e.JWT_SECRET && e.JWT_SECRETS) throw new ConfigError('invalid configuration: set JWT_SECRET or JWT_SECRETS, not both');
  if (e.BRAND_LOGO_URL && e.BRAND_LOGO_FILE) throw new ConfigError('invalid configuration: set BRAND_LOGO_URL or BRAND_LOGO_FILE, not both');
  if (e.HEADERS_TIMEOUT_SECONDS > e.REQUEST_TIMEOUT_SECONDS) {
    throw new ConfigError('invalid configuration: HEADERS_TIMEOUT_SECONDS must not exceed REQUEST_TIMEOUT_SECONDS');
  }
  if (e.DATA_DIR === 'memory' && !e.ADMIN_TOKEN) {
    throw new ConfigError('invalid configuration: ADMIN_TOKEN must be set with DATA_DIR=memory (a generated one would be kept nowhere)');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    issuer: e.ISSUER ?? `http://localhost:${e.PORT}`,
    databaseUrl: e.DATABASE_URL,
    databaseTimeoutMs: e.DATABASE_TIMEOUT_MS,
    dataDir: e.DATA_DIR,
    dataDirMinFreeMb: e.DATA_DIR_MIN_FREE_MB,
    dataDirLowFreeMb: e.DATA_DIR_LOW_FREE_MB,
    /** Configured signing secrets, newest first; empty means "use the one kept in the store". */
    jwtSecrets: e.JWT_SECRETS ?? (e.JWT_SECRET ? [e.JWT_SECRET] : []),
    ttl: {
      authRequest: e.AUTH_REQUEST_TTL_SECONDS,
      authCode: e.AUTH_CODE_TTL_SECONDS,
      accessToken: e.ACCESS_TOKEN_TTL_SECONDS,
      resourceAccessToken: e.RESOURCE_ACCESS_TOKEN_TTL_SECONDS,
      refreshToken: e.REFRESH_TOKEN_TTL_SECONDS,
    },
    /** OpenID Connect mode when set: ID tokens, discovery and a published JWKS; unset, none of them. */
    idTokenSigningAlg: e.ID_TOKEN_SIGNING_ALG,
    logoutAllowPrivateNetworks: e.LOGOUT_ALLOW_PRIVATE_NETWORKS,
    adminPort: e.ADMIN_PORT,
    adminHost: e.ADMIN_HOST,
    adminToken: e.ADMIN_TOKEN,
    requireApproval: e.REQUIRE_APPROVAL,
    dynamicRegistration: { open: e.DYNAMIC_REGISTRATION === 'open', unusedTtlSeconds: e.DYNAMIC_REGISTRATION_UNUSED_TTL_SECONDS },
    mail: {
      smtpUrl: e.SMTP_URL,
      // An address object, so that any brand name is quoted as the header needs.
      from: e.MAIL_FROM ?? { name: e.BRAND_NAME, address: `no-reply@${new URL(e.ISSUER ?? 'http://localhost').hostname}` },
    },
    owners: {
      signup: e.OWNER_SIGNUP,
      agentCreation: e.OWNER_AGENT_CREATION,
      requireVerifiedEmail: e.REQUIRE_VERIFIED_EMAIL,
      freshSeconds: e.OWNER_FRESH_SECONDS,
      approvalMailIntervalSeconds: e.APPROVAL_MAIL_INTERVAL_SECONDS,
    },
    logLevel: e.LOG_LEVEL,
    purgeIntervalSeconds: e.PURGE_INTERVAL_SECONDS,
    refreshTokenReuseIntervalSeconds: e.REFRESH_TOKEN_REUSE_INTERVAL_SECONDS,
    shutdownDelaySeconds: e.SHUTDOWN_DELAY_SECONDS,
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    auditRetentionWithoutAgentDays: e.AUDIT_RETENTION_WITHOUT_AGENT_DAYS,
    grantCacheSize: e.GRANT_CACHE_SIZE,
    grantCacheMaxAgeSeconds: e.GRANT_CACHE_MAX_AGE_SECONDS,
    signingKeysMaxAgeSeconds: e.SIGNING_KEYS_MAX_AGE_SECONDS,
    dpopNonce: e.DPOP_NONCE === 'on',
    trustProxy: e.TRUST_PROXY,
    adminTrustProxy: e.ADMIN_TRUST_PROXY,
    redisUrl: e.REDIS_URL,
    connections: {
      requestTimeoutSeconds: e.REQUEST_TIMEOUT_SECONDS,
      headersTimeoutSeconds: e.HEADERS_TIMEOUT_SECONDS,
      maxConnectionsPerIp: e.MAX_CONNECTIONS_PER_IP,
    },
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    rateLimits: {
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      authorizePerIp: e.RATE_LIMIT_AUTHORIZE_PER_IP,
      registerPerIp: e.RATE_LIMIT_REGISTER_PER_IP,
      checkStatusPerIp: e.RATE_LIMIT_CHECK_STATUS_PER_IP,
      authenticatePerIp: e.RATE_LIMIT_AUTHENTICATE_PER_IP,
      authenticatePerAgent: e.RATE_LIMIT_AUTHENTICATE_PER_AGENT,
      clientPerClient: e.RATE_LIMIT_CLIENT_PER_CLIENT,
      clientFailuresPerIp: e.RATE_LIMIT_CLIENT_FAILURES_PER_IP,
      clientFailuresPerClient: e.RATE_LIMIT_CLIENT_FAILURES_PER_CLIENT,
      emailLinkPerIp: e.RATE_LIMIT_EMAIL_LINK_PER_IP,
      emailLinkPerEmail: e.RATE_LIMIT_EMAIL_LINK_PER_EMAIL,
      passkeySignInPerIp: e.RATE_LIMIT_PASSKEY_SIGN_IN_PER_IP,
      adminFailuresPerIp: e.RATE_LIMIT_ADMIN_FAILURES_PER_IP,
    },
    brand: { name: e.BRAND_NAME, logoUrl: e.BRAND_LOGO_URL, logoFile: e.BRAND_LOGO_FILE, accentColor: e.BRAND_ACCENT_COLOR },
  };
}

export type Config = ReturnType<typeof settingsFrom>;

/**
 * Every variable with what the documentation says of it, in the schema's order: the source of the
 * README's and docs/operations.md's tables (scripts/config-docs.ts). `shownDefault` is the
 * default as they show it.
 */
export function variableDocs(): (VariableDoc & { name: string; shownDefault: string })[] {
  return Object.entries(envSchema.shape).map(([name, schema]) => {
    const doc = schema.meta() as VariableDoc | undefined;
    if (!doc?.title || !doc.description) throw new Error(`${name} has no documentation in src/config.ts`);
    const value: unknown = schema.parse(undefined);
    return { ...doc, name, shownDefault: doc.shownDefault ?? (value === undefined ? 'unset' : `\`${String(value)}\``) };
  });
}

/** A variable's default, for tools (the CLI) that must agree with the server without parsing a whole environment. */
export function defaultOf<K extends keyof Env>(name: K): z.output<typeof envSchema>[K] {
  return envSchema.shape[name].parse(undefined) as z.output<typeof envSchema>[K];
}

/** Parses the environment; the first problem becomes one line that names the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`invalid configuration: ${String(issue.path[0])} ${issue.message}`);
  }
  return settingsFrom(parsed.data);
}
