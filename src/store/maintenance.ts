import type { Db } from '../db/types.js';

// Requests and codes stay a while past expiry so that a late poll still hears "request_expired"
// and a late replay of a code still revokes what the code issued. Audit events are kept for the
// configured retention ($1 days), and so are ended grants: they are the agents' sign-in history.
// The rows of sign-ins that never reached an agent go after $2 days: anyone can start one, so
// unauthenticated traffic must not fill the audit log for a year.
const TARGETS: { table: string; expired: string }[] = [
  { table: 'auth_requests', expired: `expires_at < now() - interval '1 hour'` },
  { table: 'auth_codes', expired: `expires_at < now() - interval '1 hour'` },
  { table: 'refresh_tokens', expired: 'expires_at < now()' },
  { table: 'revoked_access_tokens', expired: 'expires_at < now()' },
  { table: 'console_signed_out', expired: 'expires_at < now()' },
  { table: 'owner_sessions', expired: 'expires_at < now()' },
  // Kept a day, past their 15 minutes, so that the limit per email can count them.
  { table: 'owner_email_links', expired: `created_at < now() - interval '1 day'` },
  { table: 'agent_assertion_jtis', expired: 'expires_at < now()' },
  { table: 'client_assertion_jtis', expired: 'expires_at < now()' },
  // Dynamic registrations (RFC 7591) that never started a sign-in, after $3 seconds: anyone may make one.
  { table: 'clients', expired: `registration = 'dynamic' AND first_used_at IS NULL AND created_at < now() - make_interval(secs => $3)` },
  { table: 'dpop_proofs', expired: 'expires_at < now()' },
  // A passkey ceremony's challenge is used once within minutes; an abandoned one is no use to anyone.
  { table: 'webauthn_challenges', expired: 'expires_at < now()' },
  // Retired ID token keys, once no token they signed is valid (the current key has no expiry).
  { table: 'signing_keys', expired: 'expires_at < now()' },
  { table: 'grants', expired: 'expires_at < now() - make_interval(days => $1)' },
  {
    table: 'audit_events',
    expired: `at < now() - make_interval(days => $1)
      OR (request_id IS NOT NULL AND agent_id IS NULL AND at < now() - make_interval(days => $2)
          AND NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.request_id = audit_events.request_id AND a.agent_id IS NOT NULL))`,
  },
  // Back-channel logout deliveries done with (delivered or failed), kept as long as the audit log.
  { table: 'logout_deliveries', expired: `status <> 'pending' AND created_at < now() - make_interval(days => $1)` },
];

/** How long the purge keeps audit events: all of them, and those of sign-ins that never reached an agent. */
export interface AuditRetention {
  auditRetentionDays: number;
  auditRetentionWithoutAgentDays: number;
  /** DYNAMIC_REGISTRATION_UNUSED_TTL_SECONDS (default: a day). */
  unusedRegistrationSeconds?: number;
}

/** Housekeeping statements: the purge of expired rows and the store's liveness probe. */
export function createMaintenanceStore(db: Db) {
  return {
    /** Tables the purge empties, in order. */
    purgeTables: TARGETS.map((t) => t.table),

    /**
     * Deletes at most `batch` expired rows of `table` (one short statement, so no lock is held
     * for long); returns how many went.
     */
    async deleteExpired(table: string, batch: number, retention: AuditRetention): Promise<number> {
      const target = TARGETS.find((t) => t.table === table);
      if (!target) throw new Error(`no purge rule for table ${table}`);
      // Only the parameters the rule uses ($1, $1 and $2, or $3 alone, renumbered $1): PostgreSQL refuses untyped extras.
      const all = [retention.auditRetentionDays, retention.auditRetentionWithoutAgentDays, retention.unusedRegistrationSeconds ?? 86400];
      const used = all.flatMap((value, i) => (target.expired.includes(`$${i + 1}`) ? [{ value, i }] : []));
      const expired = used.reduce((text, { i }, n) => text.replaceAll(`$${i + 1}`, `$${n + 1}`), target.expired);
      const params = used.map((u) => u.value);
      const { rowCount } = await db.query(
        `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${expired} LIMIT ${Number(batch)}))`,
        params,
      );
      return rowCount;
    },

    /** Throws unless the database answers a trivial query. */
    async ping(): Promise<void> {
      await db.query('SELECT 1');
    },
  };
}
