import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cpuMs } from './processes.js';

export type StoreKind = 'postgres' | 'pglite';

export const BENCH_DATABASE = 'agent_auth_bench';

/** Where each server of a run keeps its data: a schema of the bench database, or a PGlite directory. */
export interface BenchStore {
  kind: StoreKind;
  /** DATABASE_URL (PostgreSQL) or DATA_DIR (PGlite) for one server. */
  location(name: string): { url?: string; dataDir?: string };
  /** CPU time (ms) used so far by each database backend serving the bench; none when in process. */
  databaseCpuMs(): Promise<Map<number, number>>;
  dispose(): Promise<void>;
}

function withDatabase(base: string, database: string, schema?: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  if (schema) url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** A fresh database `agent_auth_bench` (dropped and recreated), one schema per server. */
export async function postgresStore(adminUrl: string, schemas: string[]): Promise<BenchStore> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${BENCH_DATABASE} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${BENCH_DATABASE}`);
  await admin.end();
  const bench = new pg.Client({ connectionString: withDatabase(adminUrl, BENCH_DATABASE) });
  await bench.connect();
  for (const schema of schemas) await bench.query(`CREATE SCHEMA ${schema}`);
  await bench.end();
  // Watches from the maintenance database, so that its own backend is not counted.
  const monitor = new pg.Client({ connectionString: adminUrl });
  await monitor.connect();
  return {
    kind: 'postgres',
    location: (name) => ({ url: withDatabase(adminUrl, BENCH_DATABASE, name) }),
    async databaseCpuMs() {
      // The backends of the servers' pools (PostgreSQL runs on this machine: their /proc is readable).
      const { rows } = await monitor.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
        [BENCH_DATABASE],
      );
      return new Map(rows.map(({ pid }) => [pid, cpuMs(pid)]));
    },
    async dispose() {
      await monitor.end();
    },
  };
}

/** PGlite on disk, as a single-node deployment would run it, in a temporary directory per server. */
export function pgliteStore(): BenchStore {
  const root = mkdtempSync(join(tmpdir(), 'agent-auth-bench-'));
  return {
    kind: 'pglite',
    location: (name) => ({ dataDir: join(root, name) }),
    // PGlite runs inside the server process: its CPU time is the server's.
    databaseCpuMs: async () => new Map(),
    async dispose() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * Fills our schema with `rows` refresh tokens (over rows/5 grants, four of five tokens spent, as
 * rotation leaves them) and `rows` past authorization requests, in a few INSERT … SELECT
 * generate_series statements. Hashes and ids are random-looking, like real ones, so that the
 * indexes grow as they would in production.
 */
export async function seedLargeStore(url: string, rows: number): Promise<void> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const grants = Math.max(1, Math.floor(rows / 5));
  const statements = [
    `INSERT INTO users (id, email) SELECT 'user_seed_' || i, 'seed-' || i || '@example.com' FROM generate_series(1, 1000) i`,
    `INSERT INTO agents (id, user_id, name, secret_hash)
       SELECT 'agent_seed_' || i, 'user_seed_' || i, 'seed', md5(i::text) FROM generate_series(1, 1000) i`,
    `INSERT INTO clients (id, name, secret_hash, redirect_uris)
       SELECT 'client_seed_' || i, 'seed', md5(i::text), ARRAY['https://seed.example/cb'] FROM generate_series(1, 100) i`,
    `INSERT INTO grants (id, client_id, agent_id, user_id, scope, model, expires_at)
       SELECT 'grant_' || md5('g' || i), 'client_seed_' || (1 + i % 100), 'agent_seed_' || (1 + i % 1000),
              'user_seed_' || (1 + i % 1000), 'openid email', 'seed-model', now() + interval '30 days'
       FROM generate_series(1, ${grants}) i`,
    `INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at, used_at)
       SELECT encode(sha256(('rt' || i)::bytea), 'base64'), 'grant_' || md5('g' || (1 + i % ${grants})), 'openid email',
              now() + interval '30 days', CASE WHEN i % 5 <> 0 THEN now() END
       FROM generate_series(1, ${rows}) i`,
    `INSERT INTO auth_requests (id, client_id, redirect_uri, state, code_challenge, scope, browser_hash, status,
                                agent_id, model, created_at, expires_at, authenticated_at, completed_at)
       SELECT 'req_' || md5('r' || i), 'client_seed_' || (1 + i % 100), 'https://seed.example/cb', md5('s' || i),
              md5('c' || i) || md5('d' || i), 'openid email', md5('b' || i), 'completed', 'agent_seed_' || (1 + i % 1000),
              'seed-model', now() - interval '1 day', now() - interval '1 day' + interval '10 minutes',
              now() - interval '1 day', now() - interval '1 day'
       FROM generate_series(1, ${rows}) i`,
    `VACUUM ANALYZE`,
  ];
  try {
    for (const sql of statements) await db.query(sql);
  } finally {
    await db.end();
  }
}

const FILL = { client: 'bench_client_', secret: 'bench-secret-', refreshToken: 'aa_rt_bench_' };

/** Website `i` of `seedCacheFill`: its credentials and the refresh token of its grant. */
export const cacheFillClient = (i: number) => ({
  client_id: `${FILL.client}${i}`,
  client_secret: `${FILL.secret}${i}`,
  refresh_token: `${FILL.refreshToken}${i}`,
});

/**
 * `count` websites (1 to count), each with a live grant of `agentId` and a refresh token for it, so
 * that as many grants, clients and access tokens can be read through the server. Secrets and
 * refresh tokens are stored as the server stores them: SHA-256, base64url.
 */
export async function seedCacheFill(url: string, count: number, agentId: string): Promise<void> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const digest = (text: string) => `translate(rtrim(encode(sha256(convert_to(${text}, 'UTF8')), 'base64'), '='), '+/', '-_')`;
  const statements: [string, unknown[]][] = [
    [
      `INSERT INTO clients (id, name, secret_hash, redirect_uris)
         SELECT $2 || i, 'bench', ${digest('$3 || i')}, ARRAY['http://localhost:9/callback'] FROM generate_series(1, $1) i`,
      [count, FILL.client, FILL.secret],
    ],
    [
      `INSERT INTO grants (id, client_id, agent_id, user_id, scope, model, expires_at)
         SELECT 'bench_grant_' || i, $2 || i, a.id, a.user_id, 'openid email', 'bench-model', now() + interval '1 day'
         FROM generate_series(1, $1) i JOIN agents a ON a.id = $3`,
      [count, FILL.client, agentId],
    ],
    [
      `INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
         SELECT ${digest('$2 || i')}, 'bench_grant_' || i, 'openid email', now() + interval '1 day' FROM generate_series(1, $1) i`,
      [count, FILL.refreshToken],
    ],
  ];
  try {
    for (const [sql, values] of statements) await db.query(sql, values);
  } finally {
    await db.end();
  }
}
