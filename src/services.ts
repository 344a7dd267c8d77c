import { GrantCache } from './cache/grant-cache.js';
import type { Config } from './config.js';
import { type Keyring, keyringFrom } from './crypto/keyring.js';
import { randomToken } from './crypto/secrets.js';
import { openDb } from './db/index.js';
import { migrate } from './db/migrate.js';
import type { Db } from './db/types.js';
import { type SignInChanges, watchSignInChanges } from './events/sign-in-changes.js';
import { createMetrics, type Metrics } from './metrics.js';
import { openSigningKeys, type SigningKeys } from './oidc/signing-keys.js';
import { createStore, type Store } from './store/index.js';

/** What every route needs, built once per process and shared by the public and admin listeners. */
export interface Services {
  config: Config;
  db: Db;
  store: Store;
  keyring: Keyring;
  /** OpenID Connect mode only (ID_TOKEN_SIGNING_ALG): the keys that sign ID tokens. */
  signingKeys?: SigningKeys;
  metrics: Metrics;
  signInChanges: SignInChanges;
}

export async function openServices(config: Config, db?: Db): Promise<Services> {
  const database = db ?? (await openDb(config));
  try {
    await migrate(database);
    const signingKeys = config.idTokenSigningAlg ? await openSigningKeys(database, config.idTokenSigningAlg, config.ttl.accessToken) : undefined;
    const signInChanges = await watchSignInChanges(database);
    const metrics = createMetrics();
    const grantCache = new GrantCache(config.grantCacheSize, metrics);
    await grantCache.listen(database);
    const store = createStore(database, grantCache);
    // The configured secrets, or else the one kept in the store (generated on first start).
    const keyring = keyringFrom(config.jwtSecrets.length > 0 ? config.jwtSecrets : [await store.serverKeys.jwtSecret(randomToken(48))]);
    return { config, db: database, store, keyring, signingKeys, metrics, signInChanges };
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}
