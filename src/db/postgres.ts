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
 * PostgreSQL over a pool. `timeoutMs` (DATABASE_TIMEOUT_MS) bounds each call whole: the wait for a
 * pooled connection and the statement's answer share it, so that a request on a hot path answers
 * within about that time even behind a queue. The database gives up on a statement 0.5 s before the
 * whole budget; a statement that waited in the queue first may still commit after the client was
 * told 503, which is why the hot writes are retry-safe (docs/operations.md, "Failure modes"). Once
 * a call has timed out, the circuit opens: the calls waiting for a connection or an answer fail at
 * once, and so does every new one (503), until a probe answers in time.
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
  // The bounded calls in progress: each is refused at once when the circuit opens.
  const inProgress = new Set<(err: Error) => void>();
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
    for (const refuse of inProgress) refuse(new NotAnswering());
    inProgress.clear();
    probe();
  }

  const listener = createPgListener(connectionString);
  /**
   * `work` raced against the circuit opening: a call waiting on a database that stopped answering
   * for another call is refused at once. Unbounded calls (migrations) just run.
   */
  function refusedWhenOpen<T>(work: Promise<T>, bounded: boolean): Promise<T> {
    if (!bounded) return work;
    let refuse!: (err: Error) => void;
    const refused = new Promise<never>((_, reject) => (refuse = reject));
    inProgress.add(refuse);
    return Promise.race([work, refused]).finally(() => inProgress.delete(refuse));
  }

  /**
   * Runs `fn` on a pool connection that listens where pg-listener.ts needs it, with what is left of
   * the call's deadline (`remaining()`, ms) for its statements. As pg's pool.query does: while the
   * connection is out, losing it fails the statement instead of surfacing as an uncaught 'error'
   * event, and after any error the connection is dropped rather than reused (its backend may be
   * gone: terminated, or the server restarted).
   */
  async function withClient<T>(fn: (client: pg.PoolClient, remaining: () => number) => Promise<T>, bounded = true): Promise<T> {
    if (circuitOpen) throw new NotAnswering();
    const deadline = Date.now() + timeoutMs;
    // At least a moment: a statement sent with no time left would time out before it was read.
    const remaining = () => (bounded ? Math.max(50, deadline - Date.now()) : UNBOUNDED_MS);
    const connecting = pool.connect();
    const client = await refusedWhenOpen(connecting, bounded).catch((err: Error) => {
      // A connection that comes after the call was refused goes back to the pool.
      connecting.then(
        (late) => late.release(),
        () => {},
      );
      timedOut(err);
      throw err;
    });
    let failed: Error | undefined;
    const onError = (err: Error) => void (failed = err);
    client.on('error', onError);
    const work = (async () => {
      await listener.prepare(client);
      return fn(client, remaining);
    })();
    try {
      return await refusedWhenOpen(work, bounded);
    } catch (err) {
      failed ??= err as Error;
      timedOut(err as Error);
      // Refused while its statement is out: the connection is dropped (below), which fails the statement too.
      work.catch(() => {});
      throw err;
    } finally {
      client.removeListener('error', onError);
      client.release(failed);
    }
  }
  const wrap = (client: pg.PoolClient, remaining: () => number): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      // Statements without parameters (migrations, BEGIN/COMMIT) stay unnamed: some hold several commands.
      const r = await client.query(timed({ text: sql, values: params, name: params ? statementName(sql) : undefined }, remaining()));
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
    async exec(sql: string) {
      await client.query(timed({ text: sql }, remaining()));
    },
  });

  return {
    kind: 'postgres',
    query: (sql, params) => withClient((client, remaining) => wrap(client, remaining).query(sql, params)),
    exec: (sql) => withClient((client, remaining) => wrap(client, remaining).exec(sql)),
    transaction: (fn, options = {}) =>
      withClient(async (client, remaining) => {
        const q = wrap(client, remaining);
        await q.exec('BEGIN');
        try {
          if (options.unbounded) await q.exec('SET LOCAL statement_timeout = 0');
          const result = await fn(q);
          await q.exec('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        }
      }, !options.unbounded),
    listen: (channel, onPayload, options) => listener.listen(channel, onPayload, options),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}
