import type { FastifyServerOptions } from 'fastify';

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
        '*.code',
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
