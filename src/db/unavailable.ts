// SQLSTATE classes (PostgreSQL Appendix A) in which every code means the database cannot serve now.
const UNAVAILABLE_CLASSES = [
  '08', // connection exception: connecting failed or the connection broke
  '53', // insufficient resources: too many connections (53300, for the server or the role), out of memory, disk full
];
const UNAVAILABLE_CODES = new Set([
  // errno of a connection refused, reset or unreachable
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '57P01', // admin_shutdown: the backend was terminated (pg_terminate_backend, a fast shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, shutting down, in recovery
  '57014', // query_canceled: the statement_timeout (src/db/postgres.ts) cut a statement short
  // The statement was rolled back whole because of what ran beside it; the same request may succeed again.
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);
// What node-postgres says, without a code, when its own timeouts fire or a connection breaks.
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection timeout|Query read timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end/i;

/**
 * Whether an error from the store means "the database is not available right now", which the
 * caller answers with 503 and Retry-After, rather than a fault in the server. The one place that
 * decides it (docs/operations.md, "Failure modes").
 */
export function isStoreUnavailable(err: { code?: unknown; message?: string }): boolean {
  const code = typeof err.code === 'string' ? err.code : '';
  return (
    UNAVAILABLE_CODES.has(code) ||
    (/^[0-9A-Z]{5}$/.test(code) && UNAVAILABLE_CLASSES.includes(code.slice(0, 2))) ||
    UNAVAILABLE_MESSAGES.test(err.message ?? '')
  );
}
