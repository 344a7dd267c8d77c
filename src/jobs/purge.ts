import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/types.js';
import { recordStep } from '../flows/steps.js';
import type { Metrics } from '../metrics.js';
import { createMaintenanceStore } from '../store/maintenance.js';
import { createSignInStore } from '../store/sign-ins.js';

const BATCH = 1000;

export interface PurgeOptions {
  auditRetentionDays: number;
  log?: FastifyBaseLogger;
  /** Counts the sign-ins whose expiry the purge records (they are expired sign-ins like any other). */
  metrics?: Metrics;
}

/**
 * Deletes what has expired, in small batches so that no statement holds locks for long;
 * returns how many rows went from each table. First it records the expiry of the requests that
 * nobody looked at since they ran out of time, so that every abandoned sign-in is in the audit log.
 */
export async function purgeExpired(db: Db, { auditRetentionDays, log, metrics }: PurgeOptions): Promise<Record<string, number>> {
  const requests = createSignInStore(db);
  for (;;) {
    const expired = await requests.expireOverdue(BATCH);
    for (const request of expired) recordStep({ log, metrics }, 'expired', request);
    if (expired.length < BATCH) break;
  }
  const maintenance = createMaintenanceStore(db);
  const removed: Record<string, number> = {};
  for (const table of maintenance.purgeTables) {
    removed[table] = 0;
    for (;;) {
      const count = await maintenance.deleteExpired(table, BATCH, auditRetentionDays);
      removed[table] += count;
      if (count < BATCH) break;
    }
  }
  return removed;
}

/**
 * Runs the purge every `intervalSeconds` in the background; returns the function that stops it
 * (and waits for a run under way). The next run is timed from the end of the previous one, so
 * runs never overlap however long one takes (a big backlog, a slow database).
 */
export function schedulePurge(db: Db, intervalSeconds: number, options: PurgeOptions & { log: FastifyBaseLogger }): () => Promise<void> {
  const { log } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  async function run() {
    try {
      log.debug({ removed: await purgeExpired(db, options) }, 'purged expired rows');
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'purge failed; will retry');
    }
    if (!stopped) schedule();
  }
  function schedule() {
    timer = setTimeout(() => {
      running = run();
    }, intervalSeconds * 1000);
    timer.unref();
  }

  schedule();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
