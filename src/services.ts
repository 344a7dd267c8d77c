import { mailOwnersOnApprovalRequests } from './approvals/notify.js';
import { GrantCache } from './cache/grant-cache.js';
import { newClientKeySets } from './clients/client-assertion.js';
import { ClientDocuments } from './clients/metadata-document.js';
import type { Config } from './config.js';
import { type Keyring, keyringFrom } from './crypto/keyring.js';
import { randomToken } from './crypto/secrets.js';
import { openDb } from './db/index.js';
import { migrate } from './db/migrate.js';
import { type SignInChanges, watchSignInChanges } from './db/sign-in-changes.js';
import type { Db } from './db/types.js';
import { DpopNonces } from './dpop/nonces.js';
import { DpopProofs } from './dpop/proofs.js';
import { writeActivityLogLines } from './events/activity-log-lines.js';
import { writeAuditLogLines } from './events/audit-log-lines.js';
import { Events } from './events/emitter.js';
import { countEvents } from './events/metrics.js';
import { createMailer, type Mailer } from './mail/mailer.js';
import { createMetrics, type Metrics } from './metrics.js';
import { openSigningKeys, type PublishedKey, type SigningKeys } from './oidc/signing-keys.js';
import { noticeNewWebsites } from './owners/notices.js';
import { SIGNING_ALGS } from './protocol/signing.js';
import { createStore, type Store, type StoreCache } from './store/index.js';
import { ResourceTokens } from './tokens/resource-tokens.js';
import { VerifiedAccessTokens } from './tokens/verified-access-tokens.js';

/**
 * Everything a process holds once, built at start and shared by the public and admin listeners:
 * the store, the keys, the events and their subscribers, and the per-process state (caches, the
 * shutdown flag). Routes hand each flow and token operation the part it declares it needs.
 */
export interface Services {
  config: Config;
  db: Db;
  store: Store;
  keyring: Keyring;
  /** OpenID Connect mode only (ID_TOKEN_SIGNING_ALG): the keys that sign ID tokens. */
  signingKeys?: SigningKeys;
  metrics: Metrics;
  /** Every fact the server records, emitted once; the audit log lines and the metrics subscribe (src/README.md). */
  events: Events;
  signInChanges: SignInChanges;
  /** Mail to owners: over SMTP_URL, or to the log without it. */
  mailer: Mailer;
  /**
   * The asymmetric keys, opened (and made, on a first start) when first needed: at start in OpenID
   * Connect mode, else by the first resource token (docs/protocol.md, "Resources").
   */
  openSigningKeys: () => Promise<SigningKeys>;
  /** The Client ID Metadata Documents this process fetched (and the CA its fetches trust besides the process's). */
  clientDocuments: ClientDocuments;
  /** The key sets of private_key_jwt clients fetched from their jwks_uri. */
  clientKeySets: ReturnType<typeof newClientKeySets>;
  /** Access tokens for resources: JWTs signed with those keys. */
  resourceTokens: ResourceTokens;
  /** The access tokens this process has verified (GRANT_CACHE_SIZE of them at most). */
  verifiedTokens: VerifiedAccessTokens;
  /** DPoP proofs (RFC 9449): their keys parsed, the nonces, the proofs this process accepted. */
  dpop: DpopProofs;
  /** `stopping` turns true when the process begins to shut down: /readyz answers 503 from then on. */
  lifecycle: { stopping: boolean };
}

export async function openServices(config: Config, db?: Db): Promise<Services> {
  const database = db ?? (await openDb(config));
  try {
    await migrate(database);
    const metrics = createMetrics();
    const grantCache: StoreCache = new GrantCache(config.grantCacheSize, metrics, config.grantCacheMaxAgeSeconds * 1000);
    await grantCache.listen(database);
    const store = createStore(database, grantCache);
    // A retired key stays published while any token it signed may live.
    const signedLifetime = Math.max(config.ttl.accessToken, config.ttl.resourceAccessToken);
    const signingKeys = config.idTokenSigningAlg ? await openSigningKeys(store.serverKeys, signedLifetime) : undefined;
    let opened: Promise<SigningKeys> | undefined = signingKeys && Promise.resolve(signingKeys);
    const openKeys = () => {
      opened ??= openSigningKeys(store.serverKeys, signedLifetime);
      // A failed opening (the store away) is tried again by the next caller.
      opened.catch(() => (opened = undefined));
      return opened;
    };
    const publishedKeys = () =>
      opened ? opened.then((keys) => keys.published()) : store.serverKeys.publishedSigningKeys<PublishedKey>(SIGNING_ALGS);
    const resourceTokens = new ResourceTokens({ config, store, signingKeys: openKeys, publishedKeys });
    const signInChanges = await watchSignInChanges(database);
    // The configured secrets, or else the one kept in the store (generated on first start).
    const keyring = keyringFrom(config.jwtSecrets.length > 0 ? config.jwtSecrets : [await store.serverKeys.jwtSecret(randomToken(48))]);
    // The nonces' secret is shared through the store, so that every instance accepts every instance's nonces.
    const nonces = new DpopNonces(await store.serverKeys.dpopNonceSecret(randomToken(32)));
    const events = new Events();
    writeAuditLogLines(events);
    writeActivityLogLines(events);
    countEvents(events, metrics);
    const mailer = createMailer(config.mail);
    noticeNewWebsites(events, { config, store, mailer });
    mailOwnersOnApprovalRequests(events, { config, store, mailer });
    return {
      config,
      db: database,
      store,
      keyring,
      signingKeys,
      metrics,
      events,
      signInChanges,
      mailer,
      openSigningKeys: openKeys,
      clientDocuments: new ClientDocuments(config.issuer),
      clientKeySets: newClientKeySets(),
      resourceTokens,
      verifiedTokens: new VerifiedAccessTokens({ config, keyring }, config.grantCacheSize, resourceTokens),
      dpop: new DpopProofs({ config, store }, nonces, config.grantCacheSize),
      lifecycle: { stopping: false },
    };
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}
