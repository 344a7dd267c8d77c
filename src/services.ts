import type { Config } from './config.js';
import { loadKeyring, type Keyring } from './crypto/keys.js';
import { openDb } from './db/index.js';
import { migrate } from './db/migrate.js';
import type { Db } from './db/types.js';
import { watchRequestChanges, type RequestChanges } from './events/request-changes.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createStore, type Store } from './store/index.js';

/** What every route needs, built once per process and shared by the public and admin listeners. */
export interface Services {
  config: Config;
  db: Db;
  store: Store;
  keyring: Keyring;
  metrics: Metrics;
  requestChanges: RequestChanges;
}

export async function openServices(config: Config, db?: Db): Promise<Services> {
  const database = db ?? (await openDb(config));
  try {
    await migrate(database);
    const keyring = await loadKeyring(database, config.jwtSecrets);
    const requestChanges = await watchRequestChanges(database);
    return { config, db: database, store: createStore(database), keyring, metrics: createMetrics(), requestChanges };
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}
