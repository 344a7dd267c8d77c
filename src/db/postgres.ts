import pg from 'pg';
import { createPgListener } from './pg-listener.js';
import type { Db, Queryable } from './types.js';

// BIGINT counts come back as numbers; none of ours come near 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

// The store sends a small, fixed set of statements: naming each one makes it a prepared statement,
// parsed and planned once per connection instead of on every call (most of PostgreSQL's CPU time
// per request otherwise; see bench/README.md). Capped, in case some caller builds SQL on the fly.
const MAX_NAMED_STATEMENTS = 1000;
const statementNames = new Map<string, string>();
function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (!name && statementNames.size < MAX_NAMED_STATEMENTS) statementNames.set(sql, (name = `s${statementNames.size}`));
  return name;
}

// Client-side wait for an answer, and the server-side limit on a statement, which must be shorter.
const QUERY_TIMEOUT_MS = 10_000;
const STATEMENT_TIMEOUT_MS = 8_000;

export function openPostgres(connectionString: string): Db {
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
    // A query that hangs (a lost server) must not hold a request forever.
    query_timeout: QUERY_TIMEOUT_MS,
    // The database gives up first: a statement the client stopped waiting for must not commit
    // afterwards, unseen (a refresh token rotated while the client was told 503).
    statement_timeout: STATEMENT_TIMEOUT_MS,
  });
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', () => {});

  const listener = createPgListener(connectionString);
  /**
   * Runs `fn` on a pool connection that listens where pg-listener.ts needs it. As pg's pool.query
   * does: while the connection is out, losing it fails the statement instead of surfacing as an
   * uncaught 'error' event, and after any error the connection is dropped rather than reused (its
   * backend may be gone: terminated, or the server restarted).
   */
  async function withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    let failed: Error | undefined;
    const onError = (err: Error) => void (failed = err);
    client.on('error', onError);
    try {
      await listener.prepare(client);
      return await fn(client);
    } catch (err) {
      failed ??= err as Error;
      throw err;
    } finally {
      client.removeListener('error', onError);
      client.release(failed);
    }
  }
  const wrap = (client: pg.PoolClient): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      // Statements without parameters (migrations, BEGIN/COMMIT) stay unnamed: some hold several commands.
      const r = await client.query({ text: sql, values: params, name: params ? statementName(sql) : undefined });
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await client.query(sql);
    },
  });

  return {
    kind: 'postgres',
    query: (sql, params) => withClient((client) => wrap(client).query(sql, params)),
    exec: (sql) => withClient((client) => wrap(client).exec(sql)),
    transaction: (fn) =>
      withClient(async (client) => {
        await client.query('BEGIN');
        try {
          const result = await fn(wrap(client));
          await client.query('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        }
      }),
    listen: (channel, onPayload, options) => listener.listen(channel, onPayload, options),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}
