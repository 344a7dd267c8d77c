import type { FastifyBaseLogger } from 'fastify';
import { logAudit } from '../audit.js';
import type { Db } from '../db/types.js';
import type { Metrics } from '../metrics.js';
import { createRequestStore } from '../store/requests.js';

// Requests and codes stay a while past expiry so that a late poll still hears "request_expired"
// and a late replay of a code still revokes what the code issued. Audit events are kept for the
// configured retention ($1 days), and so are ended grants: they are the agents' sign-in history.
const TARGETS: { table: string; expired: string }[] = [
  { table: 'auth_requests', expired: `expires_at < now() - interval '1 hour'` },
  { table: 'auth_codes', expired: `expires_at < now() - interval '1 hour'` },
  { table: 'refresh_tokens', expired: 'expires_at < now()' },
  { table: 'revoked_access_tokens', expired: 'expires_at < now()' },
  { table: 'grants', expired: 'expires_at < now() - make_interval(days => $1)' },
  { table: 'audit_events', expired: 'at < now() - make_interval(days => $1)' },
];
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
  const requests = createRequestStore(db);
  for (;;) {
    const expired = await requests.expireOverdue(BATCH);
    if (log) for (const request of expired) logAudit(log, 'expired', request);
    if (expired.length > 0) metrics?.signIns.inc({ stage: 'expired' }, expired.length);
    if (expired.length < BATCH) break;
  }
  const removed: Record<string, number> = {};
  for (const { table, expired } of TARGETS) {
    removed[table] = 0;
    for (;;) {
      const { rowCount } = await db.query(
        `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${expired} LIMIT ${BATCH}))`,
        expired.includes('$1') ? [auditRetentionDays] : [],
      );
      removed[table] += rowCount;
      if (rowCount < BATCH) break;
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
