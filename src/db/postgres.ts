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

// While the circuit is open (below), the database is asked again this often.
const PROBE_INTERVAL_MS = 1000;
// Migrations may rightly take long, and an instance starting beside another waits for its turn.
const UNBOUNDED_MS = 10 * 60_000;

/** A statement with its own deadline (pg reads `query_timeout` per query; its types do not say so). */
const timed = (query: pg.QueryConfig, queryTimeout: number | undefined) => ({ ...query, query_timeout: queryTimeout }) as pg.QueryConfig;

/** The refusal while the circuit is open: the database did not answer in time, and has not since. */
class NotAnswering extends Error {
  readonly code = 'ETIMEDOUT';
  constructor() {
    super('the database did not answer in time; waiting for a probe to succeed');
  }
}

// pg's own words when its deadlines pass (connecting, or waiting for an answer).
const TIMED_OUT = /Query read timeout|timeout exceeded when trying to connect|connection timeout/i;

/**
 * PostgreSQL over a pool. `timeoutMs` (DATABASE_TIMEOUT_MS) bounds each statement: the client waits
 * that long for an answer, and the database gives up a little sooner, so that a statement the client
 * stopped waiting for does not commit afterwards, unseen (a refresh token rotated while the client
 * was told 503). Once a statement has timed out, the circuit opens: every call fails at once (503)
 * instead of queueing behind a database that does not answer, until a probe answers in time.
 */
export function openPostgres(connectionString: string, timeoutMs: number): Db {
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: timeoutMs,
    idleTimeoutMillis: 30000,
    query_timeout: timeoutMs,
    statement_timeout: Math.max(100, timeoutMs - 500),
  });
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', () => {});

  let circuitOpen = false;
  function probe() {
    setTimeout(() => {
      pool.query('SELECT 1').then(
        () => void (circuitOpen = false),
        () => probe(),
      );
    }, PROBE_INTERVAL_MS).unref();
  }
  function timedOut(err: Error) {
    if (circuitOpen || !TIMED_OUT.test(err.message)) return;
    circuitOpen = true;
    probe();
  }

  const listener = createPgListener(connectionString);
  /**
   * Runs `fn` on a pool connection that listens where pg-listener.ts needs it. As pg's pool.query
   * does: while the connection is out, losing it fails the statement instead of surfacing as an
   * uncaught 'error' event, and after any error the connection is dropped rather than reused (its
   * backend may be gone: terminated, or the server restarted).
   */
  async function withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (circuitOpen) throw new NotAnswering();
    const client = await pool.connect().catch((err: Error) => {
      timedOut(err);
      throw err;
    });
    let failed: Error | undefined;
    const onError = (err: Error) => void (failed = err);
    client.on('error', onError);
    try {
      await listener.prepare(client);
      return await fn(client);
    } catch (err) {
      failed ??= err as Error;
      timedOut(err as Error);
      throw err;
    } finally {
      client.removeListener('error', onError);
      client.release(failed);
    }
  }
  const wrap = (client: pg.PoolClient, queryTimeout?: number): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      // Statements without parameters (migrations, BEGIN/COMMIT) stay unnamed: some hold several commands.
      const r = await client.query(timed({ text: sql, values: params, name: params ? statementName(sql) : undefined }, queryTimeout));
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await client.query(timed({ text: sql }, queryTimeout));
    },
  });

  return {
    kind: 'postgres',
    query: (sql, params) => withClient((client) => wrap(client).query(sql, params)),
    exec: (sql) => withClient((client) => wrap(client).exec(sql)),
    transaction: (fn, options = {}) =>
      withClient(async (client) => {
        await client.query('BEGIN');
        try {
          if (options.unbounded) await client.query(timed({ text: 'SET LOCAL statement_timeout = 0' }, UNBOUNDED_MS));
          const result = await fn(wrap(client, options.unbounded ? UNBOUNDED_MS : undefined));
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
