import type { Events } from '../events/emitter.js';
import type { Log } from '../logger.js';
import type { Store } from '../store/index.js';
import type { AuditRetention } from '../store/maintenance.js';
import { repeat } from './repeat.js';

const BATCH = 1000;

/** What the purge uses: the store slices it deletes through, and the events of the expiries it records. */
export interface PurgeDeps {
  store: Pick<Store, 'signIns' | 'maintenance'>;
  events: Events;
}

export interface PurgeOptions extends AuditRetention {
  log: Log;
}

/**
 * Deletes what has expired, in small batches so that no statement holds locks for long;
 * returns how many rows went from each table. First it records the expiry of the sign-ins that
 * nobody looked at since they ran out of time, so that every abandoned sign-in is in the audit log
 * (and counted, as any other expired sign-in).
 */
export async function purgeExpired({ store, events }: PurgeDeps, { log, ...retention }: PurgeOptions): Promise<Record<string, number>> {
  for (;;) {
    const expired = await store.signIns.expireOverdue(BATCH);
    for (const signIn of expired) events.emit('sign-in.expired', signIn, { log });
    if (expired.length < BATCH) break;
  }
  const { maintenance } = store;
  const removed: Record<string, number> = {};
  for (const table of maintenance.purgeTables) {
    removed[table] = 0;
    for (;;) {
      const count = await maintenance.deleteExpired(table, BATCH, retention);
      removed[table] += count;
      if (count < BATCH) break;
    }
  }
  return removed;
}

/** Runs the purge every `intervalSeconds` in the background; returns the function that stops it. */
export function schedulePurge(deps: PurgeDeps, intervalSeconds: number, options: PurgeOptions): () => Promise<void> {
  const { log } = options;
  return repeat(intervalSeconds, async () => {
    try {
      log.debug({ removed: await purgeExpired(deps, options) }, 'purged expired rows');
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'purge failed; will retry');
    }
  });
}
