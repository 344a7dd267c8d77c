import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

/**
 * Request logs carry the path only: query strings can hold state values and request ids, and
 * bodies and credentials are never logged. The redact list is the second line of defence.
 */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
        'res.headers.location',
        '*.client_secret',
        '*.agent_secret',
        // Authorization codes by where they travel (a request's body or query), so that the `code` of
        // an error (a SQLSTATE such as 53300, an errno such as ECONNREFUSED) stays readable.
        '*.body.code',
        '*.query.code',
        'body.code',
        'query.code',
        '*.code_verifier',
        '*.refresh_token',
        '*.access_token',
        '*.token',
        '*.password',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (req) => ({
        method: req.method,
        path: req.url.split('?')[0],
        remoteAddress: req.ip,
      }),
    },
  };
}

/** How often a run of identical warnings is logged at most (the rest are counted, see `throttledWarning`). */
export const REPEATED_WARNING_INTERVAL_MS = 10_000;

/**
 * A warning that repeats with every failed request during an incident (the store or Redis away):
 * the first of a run is logged at once, then at most one line per interval and `key`, carrying in
 * `suppressed` how many were left out since the line before.
 */
export function throttledWarning(intervalMs = REPEATED_WARNING_INTERVAL_MS) {
  const runs = new Map<string, { until: number; suppressed: number }>();
  return (log: FastifyBaseLogger, fields: Record<string, unknown>, message: string, key = '') => {
    const now = Date.now();
    const id = `${message}\0${key}`;
    const run = runs.get(id);
    if (run && now < run.until) {
      run.suppressed++;
      return;
    }
    log.warn(run?.suppressed ? { ...fields, suppressed: run.suppressed } : fields, message);
    runs.set(id, { until: now + intervalMs, suppressed: 0 });
  };
}
