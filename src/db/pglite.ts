import { mkdirSync } from 'node:fs';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { Db, Queryable } from './types.js';

/** Embedded PostgreSQL (WASM); `dataDir` "memory" keeps everything in memory. */
export async function openPglite(dataDir: string): Promise<Db> {
  if (dataDir !== 'memory') mkdirSync(dataDir, { recursive: true });
  return wrapPglite(await PGlite.create(dataDir === 'memory' ? undefined : dataDir));
}

/** The store's query interface over a PGlite instance that is already open. */
export function wrapPglite(db: PGlite): Db {
  const wrap = (target: PGlite | Transaction): Queryable => ({
    async query<T>(sql: string, params?: unknown[]) {
      const r = await target.query<T>(sql, params as unknown[]);
      return { rows: r.rows, rowCount: r.rowCount ?? r.rows.length };
    },
    async exec(sql: string) {
      await target.exec(sql);
    },
  });
  const root = wrap(db);

  return {
    kind: 'pglite',
    query: root.query,
    exec: root.exec,
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    // One process, one connection: every notification, its own included, arrives with the answer
    // to the statement that committed it, and none can be missed.
    async listen(channel, onPayload, options) {
      const unlisten = await db.listen(channel, onPayload);
      options?.onStatus?.(true);
      return async () => {
        if (!db.closed) await unlisten();
      };
    },
    async close() {
      if (!db.closed) await db.close();
    },
  };
}
