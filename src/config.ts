import { isIP } from 'node:net';
import { z } from 'zod';
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

const envSchema = z.object({
  PORT: port.default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  ISSUER: z
    .url({ protocol: /^https?$/ })
    .refine((u) => !u.endsWith('/'), 'must not end with a slash')
    .superRefine((u, ctx) => {
      const problem = transportProblem(new URL(u));
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  JWT_SECRET: secret.optional(),
  JWT_SECRETS: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    )
    .pipe(z.array(secret).min(1, 'must name at least one secret'))
    .optional(),
  AUTH_REQUEST_TTL_SECONDS: seconds.max(600).default(600),
  AUTH_CODE_TTL_SECONDS: seconds.max(600).default(600),
  ACCESS_TOKEN_TTL_SECONDS: seconds.max(3600).default(3600),
  REFRESH_TOKEN_TTL_SECONDS: seconds.default(2592000),
  // Set: OpenID Connect mode, ID tokens signed with a key pair kept in the store (docs/interop.md).
  ID_TOKEN_SIGNING_ALG: z.enum(SIGNING_ALGS).optional(),
  ADMIN_PORT: port.default(3001),
  ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  REQUIRE_APPROVAL: bool.default(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PURGE_INTERVAL_SECONDS: seconds.default(300),
  // 0 switches retry-safe rotation off (docs/security.md).
  REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
  // How long SIGTERM keeps serving (readyz 503) before draining (docs/operations.md).
  SHUTDOWN_DELAY_SECONDS: z.coerce.number().int().min(0).max(120).default(0),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).default(365),
  // Grants (and as many clients) kept in memory for /userinfo and /introspect; 0: off (docs/operations.md).
  GRANT_CACHE_SIZE: count.max(1_000_000).default(10_000),
  TRUST_PROXY: z
    .string()
    .transform((v, ctx) => {
      const trusted = parseTrustProxy(v);
      const bad = Array.isArray(trusted) ? trusted.find((entry) => !isProxyAddress(entry)) : undefined;
      if (bad !== undefined)
        ctx.addIssue({ code: 'custom', message: `must be true, false, a hop count or a comma-separated list of addresses/CIDRs ("${bad}" is none)` });
      return trusted;
    })
    .default(false),
  REDIS_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(300),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional(),
  RATE_LIMIT_WINDOW_SECONDS: seconds.default(60),
  RATE_LIMIT_AUTHORIZE_PER_IP: count.default(120),
  RATE_LIMIT_CHECK_STATUS_PER_IP: count.default(600),
  RATE_LIMIT_AUTHENTICATE_PER_IP: count.default(60),
  RATE_LIMIT_AUTHENTICATE_PER_AGENT: count.default(20),
  // Off by default: a website's own authenticated traffic is never refused (docs/security.md, Rate limits).
  RATE_LIMIT_CLIENT_PER_CLIENT: count.default(0),
  RATE_LIMIT_CLIENT_FAILURES_PER_IP: count.default(300),
  RATE_LIMIT_CLIENT_FAILURES_PER_CLIENT: count.default(20),
  BRAND_NAME: z.string().trim().min(1).max(60).default('agent-auth'),
  BRAND_LOGO_URL: z.url({ protocol: /^https?$/ }).optional(),
  BRAND_LOGO_FILE: z
    .string()
    .regex(/\.(png|svg|jpe?g|webp|gif)$/i, 'must name a .png, .svg, .jpg, .webp or .gif file')
    .optional(),
  BRAND_ACCENT_COLOR: z
    .string()
    .regex(/^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i, 'must be a hex colour such as #1f6feb')
    .optional(),
});

export type Env = z.input<typeof envSchema>;

export class ConfigError extends Error {}

/** The settings, named for the code that reads them; their meaning is in the README's table. */
function settingsFrom(e: z.output<typeof envSchema>) {
  if (e.JWT_SECRET && e.JWT_SECRETS) throw new ConfigError('invalid configuration: set JWT_SECRET or JWT_SECRETS, not both');
  if (e.BRAND_LOGO_URL && e.BRAND_LOGO_FILE) throw new ConfigError('invalid configuration: set BRAND_LOGO_URL or BRAND_LOGO_FILE, not both');
  if (e.DATA_DIR === 'memory' && !e.ADMIN_TOKEN) {
    throw new ConfigError('invalid configuration: ADMIN_TOKEN must be set with DATA_DIR=memory (a generated one would be kept nowhere)');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    issuer: e.ISSUER ?? `http://localhost:${e.PORT}`,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    /** Configured signing secrets, newest first; empty means "use the one kept in the store". */
    jwtSecrets: e.JWT_SECRETS ?? (e.JWT_SECRET ? [e.JWT_SECRET] : []),
    ttl: {
      authRequest: e.AUTH_REQUEST_TTL_SECONDS,
      authCode: e.AUTH_CODE_TTL_SECONDS,
      accessToken: e.ACCESS_TOKEN_TTL_SECONDS,
      refreshToken: e.REFRESH_TOKEN_TTL_SECONDS,
    },
    /** OpenID Connect mode when set: ID tokens, discovery and a published JWKS; unset, none of them. */
    idTokenSigningAlg: e.ID_TOKEN_SIGNING_ALG,
    adminPort: e.ADMIN_PORT,
    adminHost: e.ADMIN_HOST,
    adminToken: e.ADMIN_TOKEN,
    requireApproval: e.REQUIRE_APPROVAL,
    logLevel: e.LOG_LEVEL,
    purgeIntervalSeconds: e.PURGE_INTERVAL_SECONDS,
    refreshTokenReuseIntervalSeconds: e.REFRESH_TOKEN_REUSE_INTERVAL_SECONDS,
    shutdownDelaySeconds: e.SHUTDOWN_DELAY_SECONDS,
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    grantCacheSize: e.GRANT_CACHE_SIZE,
    trustProxy: e.TRUST_PROXY,
    redisUrl: e.REDIS_URL,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    rateLimits: {
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      authorizePerIp: e.RATE_LIMIT_AUTHORIZE_PER_IP,
      checkStatusPerIp: e.RATE_LIMIT_CHECK_STATUS_PER_IP,
      authenticatePerIp: e.RATE_LIMIT_AUTHENTICATE_PER_IP,
      authenticatePerAgent: e.RATE_LIMIT_AUTHENTICATE_PER_AGENT,
      clientPerClient: e.RATE_LIMIT_CLIENT_PER_CLIENT,
      clientFailuresPerIp: e.RATE_LIMIT_CLIENT_FAILURES_PER_IP,
      clientFailuresPerClient: e.RATE_LIMIT_CLIENT_FAILURES_PER_CLIENT,
    },
    brand: { name: e.BRAND_NAME, logoUrl: e.BRAND_LOGO_URL, logoFile: e.BRAND_LOGO_FILE, accentColor: e.BRAND_ACCENT_COLOR },
  };
}

export type Config = ReturnType<typeof settingsFrom>;

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
