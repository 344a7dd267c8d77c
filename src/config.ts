import { z } from 'zod';
import { transportProblem } from './oauth/transport.js';

const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().int().min(1);
// A request count per window; 0 switches that limit off.
const count = z.coerce.number().int().min(0);
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const secret = z.string().refine((s) => Buffer.byteLength(s) >= 32, 'must be at least 32 bytes');

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
    .transform((s) => s.split(',').map((p) => p.trim()).filter(Boolean))
    .pipe(z.array(secret).min(1, 'must name at least one secret'))
    .optional(),
  AUTH_REQUEST_TTL_SECONDS: seconds.max(600).default(600),
  AUTH_CODE_TTL_SECONDS: seconds.max(600).default(600),
  ACCESS_TOKEN_TTL_SECONDS: seconds.max(3600).default(3600),
  REFRESH_TOKEN_TTL_SECONDS: seconds.default(2592000),
  ADMIN_PORT: port.default(3001),
  ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  REQUIRE_APPROVAL: bool.default(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PURGE_INTERVAL_SECONDS: seconds.default(300),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).default(365),
  TRUST_PROXY: bool.default(false),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional(),
  RATE_LIMIT_WINDOW_SECONDS: seconds.default(60),
  RATE_LIMIT_AUTHORIZE_PER_IP: count.default(120),
  RATE_LIMIT_CHECK_STATUS_PER_IP: count.default(600),
  RATE_LIMIT_AUTHENTICATE_PER_IP: count.default(60),
  RATE_LIMIT_AUTHENTICATE_PER_AGENT: count.default(20),
  RATE_LIMIT_CLIENT_PER_CLIENT: count.default(600),
});

export type Env = z.input<typeof envSchema>;

export interface Config {
  port: number;
  host: string;
  issuer: string;
  databaseUrl?: string;
  dataDir: string;
  /** Configured signing secrets, newest first; empty means "use the one kept in the store". */
  jwtSecrets: string[];
  ttl: { authRequest: number; authCode: number; accessToken: number; refreshToken: number };
  adminPort: number;
  adminHost: string;
  adminToken?: string;
  requireApproval: boolean;
  logLevel: string;
  purgeIntervalSeconds: number;
  auditRetentionDays: number;
  trustProxy: boolean;
  redisUrl?: string;
  rateLimits: {
    windowSeconds: number;
    authorizePerIp: number;
    checkStatusPerIp: number;
    authenticatePerIp: number;
    authenticatePerAgent: number;
    /** /token, /introspect and /revoke together, per client_id. */
    clientPerClient: number;
  };
}

export class ConfigError extends Error {}

/** Parses the environment; the first problem becomes one line that names the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`invalid configuration: ${String(issue.path[0])} ${issue.message}`);
  }
  const e = parsed.data;
  if (e.JWT_SECRET && e.JWT_SECRETS) {
    throw new ConfigError('invalid configuration: set JWT_SECRET or JWT_SECRETS, not both');
  }
  if (e.DATA_DIR === 'memory' && !e.ADMIN_TOKEN) {
    throw new ConfigError('invalid configuration: ADMIN_TOKEN must be set with DATA_DIR=memory (a generated one would be kept nowhere)');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    issuer: e.ISSUER ?? `http://localhost:${e.PORT}`,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    jwtSecrets: e.JWT_SECRETS ?? (e.JWT_SECRET ? [e.JWT_SECRET] : []),
    ttl: {
      authRequest: e.AUTH_REQUEST_TTL_SECONDS,
      authCode: e.AUTH_CODE_TTL_SECONDS,
      accessToken: e.ACCESS_TOKEN_TTL_SECONDS,
      refreshToken: e.REFRESH_TOKEN_TTL_SECONDS,
    },
    adminPort: e.ADMIN_PORT,
    adminHost: e.ADMIN_HOST,
    adminToken: e.ADMIN_TOKEN,
    requireApproval: e.REQUIRE_APPROVAL,
    logLevel: e.LOG_LEVEL,
    purgeIntervalSeconds: e.PURGE_INTERVAL_SECONDS,
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    trustProxy: e.TRUST_PROXY,
    redisUrl: e.REDIS_URL,
    rateLimits: {
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      authorizePerIp: e.RATE_LIMIT_AUTHORIZE_PER_IP,
      checkStatusPerIp: e.RATE_LIMIT_CHECK_STATUS_PER_IP,
      authenticatePerIp: e.RATE_LIMIT_AUTHENTICATE_PER_IP,
      authenticatePerAgent: e.RATE_LIMIT_AUTHENTICATE_PER_AGENT,
      clientPerClient: e.RATE_LIMIT_CLIENT_PER_CLIENT,
    },
  };
}
