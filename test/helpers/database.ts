import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { inject } from 'vitest';
import { defaultOf } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { wrapPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import type { Db } from '../../src/db/types.js';

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);
export const storeName = usingPostgres ? 'postgres' : 'pglite';

export interface TestDatabase {
  /** DATABASE_URL for a server process on this database (PostgreSQL only). */
  url?: string;
  open(): Promise<Db>;
  drop(): Promise<void>;
}

/** URL of the PostgreSQL database with `search_path` set to one schema. */
export function schemaUrl(base: string, schema: string): string {
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** The migrated, empty store test/global-setup.ts dumped, for PGlite's `loadDataDir`. */
const template = () => new Blob([readFileSync(inject('pgliteTemplate'))]);

/** What reads rows: a PGlite instance or a pg client. */
interface Reader {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

/**
 * The objects of a schema, counted: a test that adds a trigger or a function to its store (to inject a fault)
 * changes it, and such a store is not reused.
 */
async function shapeOf(db: Reader, schema: string): Promise<string> {
  const { rows } = await db.query<{ shape: string }>(
    `SELECT concat_ws('/', (SELECT count(*) FROM pg_class WHERE relnamespace = n.oid), (SELECT count(*) FROM pg_proc WHERE pronamespace = n.oid),
       (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = n.oid)) AS shape
     FROM pg_namespace n WHERE n.nspname = $1`,
    [schema],
  );
  return rows[0]?.shape ?? '';
}

/**
 * One script that empties a migrated store as the migrations left it: every table but theirs, and its sequences
 * restarted. Triggers and foreign keys are off meanwhile (the replica role), so no order is needed: milliseconds,
 * where a new store costs seconds (PGlite) or a second (a schema migrated again).
 */
async function emptyingScript(db: Reader, schema: string): Promise<string> {
  const { rows } = await db.query<{ statement: string }>(
    `SELECT format('DELETE FROM %I.%I;', schemaname, tablename) AS statement FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'
     UNION ALL SELECT format('ALTER SEQUENCE %I.%I RESTART;', sequence_schema, sequence_name) FROM information_schema.sequences WHERE sequence_schema = $1`,
    [schema],
  );
  return `BEGIN; SET LOCAL session_replication_role = replica; ${rows.map((r) => r.statement).join(' ')} COMMIT; RESET ALL;`;
}

/** Stores that closed test servers of this worker left behind, emptied, for the next test server of any file. */
const idlePglites: PGlite[] = [];
let pristinePglite: { shape: string; emptying: string } | undefined;

/** An in-memory PGlite loaded from the template, or one of this worker's idle ones; closing it hands it back. */
async function openPgliteFromTemplate(): Promise<Db> {
  let pglite = idlePglites.pop();
  if (!pglite) {
    pglite = await PGlite.create({ loadDataDir: template() });
    pristinePglite ??= { shape: await shapeOf(pglite, 'public'), emptying: await emptyingScript(pglite, 'public') };
  }
  const { shape, emptying } = pristinePglite!;
  const store = pglite;
  const db = wrapPglite(store);
  const listening = new Set<() => Promise<void>>();
  let closed = false;
  return {
    ...db,
    async listen(channel, onPayload, options) {
      const unlisten = await db.listen(channel, onPayload, options);
      listening.add(unlisten);
      return async () => {
        listening.delete(unlisten);
        await unlisten();
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...listening].map((unlisten) => unlisten()));
      // A store a test left closed, mid-transaction or changed in shape is not reused.
      if (store.closed) return;
      try {
        if ((await shapeOf(store, 'public')) === shape) {
          await store.exec(emptying);
          return void idlePglites.push(store);
        }
      } catch {
        // Mid-transaction, or broken otherwise: closed below.
      }
      await store.close();
    },
  };
}

/**
 * The embedded store a server's first start on a new DATA_DIR would create at `dir`, made from the
 * migrated template instead: seconds instead of a minute on a busy machine.
 */
export async function seedPgliteDir(dir: string): Promise<void> {
  const db = await PGlite.create(dir, { loadDataDir: template() });
  await db.close();
}

/** Migrated PostgreSQL schemas of this worker's closed test servers, emptied, with their shape when new. */
const idleSchemas: { schema: string; shape: string }[] = [];

async function withClient<T>(base: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A fresh database for one test server: a schema of its own on PostgreSQL when TEST_DATABASE_URL is set (so
 * parallel files never collide), else an in-memory PGlite. Empty, or with `migrated`, as the migrations leave
 * it: then it may be one that an earlier test server of this worker used, emptied.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    return { open: openPgliteFromTemplate, drop: async () => {} };
  }
  const reused = options.migrated ? idleSchemas.pop() : undefined;
  const schema = reused?.schema ?? `t_${options.migrated ? `${inject('testRun')}_` : ''}${randomBytes(6).toString('hex')}`;
  const url = schemaUrl(base, schema);
  let shape = reused?.shape;
  if (!reused) {
    await withClient(base, (c) => c.query(`CREATE SCHEMA ${schema}`));
    if (options.migrated) {
      const db = openPostgres(url, defaultOf('DATABASE_TIMEOUT_MS'));
      await migrate(db).finally(() => db.close());
      shape = await withClient(base, (c) => shapeOf(c, schema));
    }
  }
  return {
    url,
    open: async () => openPostgres(url, defaultOf('DATABASE_TIMEOUT_MS')),
    async drop() {
      await withClient(base, async (c) => {
        if (shape !== undefined && (await shapeOf(c, schema)) === shape) {
          // A connection a test left holding locks must not stall the next test: then drop the schema instead.
          const emptied = await c.query(`SET lock_timeout = '2s'; ${await emptyingScript(c, schema)}`).then(
            () => true,
            () =>
              c.query('ROLLBACK').then(
                () => false,
                () => false,
              ),
          );
          if (emptied) return void idleSchemas.push({ schema, shape });
        }
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      });
    },
  };
}
