import { join } from 'node:path';
import type { Config } from '../config.js';
import { lockDataDir } from './data-dir-lock.js';
import { checkFreeSpace } from './data-dir-space.js';
import { openPostgres } from './postgres.js';
import type { Db } from './types.js';

export type { Db, Queryable } from './types.js';

export async function openDb(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databaseTimeoutMs' | 'dataDirMinFreeMb'>): Promise<Db> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, config.databaseTimeoutMs);
  // Loaded only for the embedded store, as are the WASM engine's megabytes.
  const { openPglite } = await import('./pglite.js');
  if (config.dataDir === 'memory') return openPglite('memory');
  await checkFreeSpace(config.dataDir, config.dataDirMinFreeMb);
  const unlock = lockDataDir(config.dataDir);
  try {
    const db = await openPglite(join(config.dataDir, 'pglite'));
    return {
      ...db,
      async close() {
        await db.close();
        unlock();
      },
    };
  } catch (err) {
    unlock();
    throw err;
  }
}
