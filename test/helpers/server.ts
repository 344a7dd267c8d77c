import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/admin-app.js';
import { buildApp } from '../../src/app.js';
import { type Env, loadConfig } from '../../src/config.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { openPostgres } from '../../src/db/postgres.js';
import { openServices, type Services } from '../../src/services.js';
import { createTestDatabase } from './database.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const ISSUER = 'http://localhost:3000';

/** The fields of a website's view in the admin API (`client_secret` too when it is created or rotated). */
export const CLIENT_VIEW = [
  'active',
  'backchannel_logout_uri',
  'client_id',
  'created_at',
  'dpop_bound_access_tokens',
  'dpop_nonce_required',
  'id_token_signed_response_alg',
  'name',
  'owner_sign_in',
  'redirect_uris',
  'registration',
  'token_endpoint_auth_method',
];

export interface TestServer {
  app: FastifyInstance;
  admin: FastifyInstance;
  services: Services;
  /** PostgreSQL only: the database's URL, for a second instance over it. */
  databaseUrl?: string;
  /** Calls the admin API with the admin token. */
  adminCall(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<{ statusCode: number; json: any }>;
  createClient(redirectUris?: string[]): Promise<{ client_id: string; client_secret: string; redirect_uris: string[] }>;
  createAgent(email?: string): Promise<{ agent_id: string; agent_secret: string; email: string }>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** PostgreSQL only: connect through another address (a proxy that a fault test controls). */
  rewriteDatabaseUrl?: (url: string) => string;
  /** Where both listeners log (pino); by default they are silent. */
  logger?: FastifyBaseLogger;
}

/** Both listeners over a fresh database of the store under test, driven with `inject`. */
export async function startTestServer(env: Partial<Env> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const database = await createTestDatabase({ migrated: true });
  const config = loadConfig({
    DATA_DIR: 'memory',
    ISSUER,
    ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    JWT_SECRET: 'test-jwt-secret-that-is-at-least-32-bytes-long',
    // Tests send far more requests from one address than a person would; limits get tests of their own.
    RATE_LIMIT_AUTHORIZE_PER_IP: '100000',
    RATE_LIMIT_CHECK_STATUS_PER_IP: '100000',
    RATE_LIMIT_AUTHENTICATE_PER_IP: '100000',
    RATE_LIMIT_AUTHENTICATE_PER_AGENT: '100000',
    RATE_LIMIT_CLIENT_PER_CLIENT: '100000',
    RATE_LIMIT_CLIENT_FAILURES_PER_IP: '100000',
    RATE_LIMIT_CLIENT_FAILURES_PER_CLIENT: '100000',
    RATE_LIMIT_ADMIN_FAILURES_PER_IP: '100000',
    ...env,
  } as Record<string, string>);
  const db =
    options.rewriteDatabaseUrl && database.url
      ? openPostgres(options.rewriteDatabaseUrl(database.url), config.databaseTimeoutMs)
      : await database.open();
  const services = await openServices(config, db);
  return instanceOver(services, database.url, options.logger, async () => {
    await services.db.close();
    await database.drop();
  });
}

/**
 * A second instance over the first one's database, as behind a load balancer. On PostgreSQL it
 * has Services of its own (its own pool, keyring read from the store, metrics) over the same
 * schema. PGlite is one in-process database that cannot be opened twice, so there the second
 * instance is a second pair of apps over the first one's Services: the closest equivalent.
 * Close it before the first.
 */
export async function startSecondInstance(first: TestServer, options: Pick<TestServerOptions, 'rewriteDatabaseUrl'> = {}): Promise<TestServer> {
  if (!first.databaseUrl) return instanceOver(first.services, undefined, undefined, async () => {});
  const url = options.rewriteDatabaseUrl?.(first.databaseUrl) ?? first.databaseUrl;
  const services = await openServices(first.services.config, openPostgres(url, first.services.config.databaseTimeoutMs));
  return instanceOver(services, first.databaseUrl, undefined, () => services.db.close());
}

/** A server and a second instance over the same database, as most two-instance tests want them. */
export async function startTwoInstances(env: Partial<Env> = {}): Promise<{ server: TestServer; second: TestServer }> {
  const server = await startTestServer(env);
  return { server, second: await startSecondInstance(server) };
}

/** Closes the servers in order, passing over those that never started. */
export async function closeAll(...servers: (TestServer | undefined)[]): Promise<void> {
  for (const server of servers) await server?.close();
}

/** Both listeners over `services`; `release` runs after they have closed. */
async function instanceOver(
  services: Services,
  databaseUrl: string | undefined,
  logger: FastifyBaseLogger | undefined,
  release: () => Promise<void>,
): Promise<TestServer> {
  const app = await buildApp(services, { loggerInstance: logger });
  const admin = await buildAdminApp(services, sha256(ADMIN_TOKEN), { loggerInstance: logger });

  async function adminCall(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
    const res = await admin.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { statusCode: res.statusCode, json: res.body ? res.json() : undefined };
  }

  return {
    app,
    admin,
    services,
    databaseUrl,
    adminCall,
    async createClient(redirectUris = ['https://shop.example/callback']) {
      const res = await adminCall('POST', '/admin/clients', { name: 'Shop', redirect_uris: redirectUris });
      if (res.statusCode !== 201) throw new Error(`client creation failed: ${JSON.stringify(res.json)}`);
      return res.json;
    },
    async createAgent(email = `owner-${Math.random().toString(36).slice(2)}@example.com`) {
      const res = await adminCall('POST', '/admin/agents', { email, name: 'Test agent' });
      if (res.statusCode !== 201) throw new Error(`agent creation failed: ${JSON.stringify(res.json)}`);
      return res.json;
    },
    async close() {
      await app.close();
      await admin.close();
      await release();
    },
  };
}
