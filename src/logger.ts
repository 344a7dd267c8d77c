import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import type { BaseLogger, Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

/** What code outside the HTTP layer logs through: a request's logger, or the process's. */
export type Log = Pick<BaseLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'>;

/** What a log line says of a request: never its query string, headers or body. */
function requestFields(req: { method: string; url: string; ip: string }) {
  return { method: req.method, path: req.url.split('?')[0], remoteAddress: req.ip };
}

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
        // A DPoP proof, good once for a minute (RFC 9449).
        'req.headers.dpop',
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
    serializers: { req: requestFields },
  };
}

/**
 * A request's logger: the same lines as the child Fastify would make (its `reqId` binding, the
 * root's redaction and serializers), but the child is only made by the first line at an enabled
 * level. Most requests log nothing at `warn`, and a pino child per request (its bindings
 * serialised, its formatters rebuilt) was a visible share of every answer.
 */
class RequestLogger {
  private made?: Logger;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}
  /** The pino child, made on first use. */
  logger(): Logger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }
  /** Writes the line if its level is enabled; until the child exists, the root's level decides. */
  private write(level: Level, line: unknown[]): void {
    const enabled = this.made ? this.made.isLevelEnabled(level) : this.parent.isLevelEnabled(level);
    if (enabled) (this.logger()[level] as (...args: unknown[]) => void)(...line);
  }
  get level(): string {
    return this.made?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.logger().level = level;
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger().child(bindings, options);
  }
  silent(): void {}
  fatal(...line: unknown[]) {
    this.write('fatal', line);
  }
  error(...line: unknown[]) {
    this.write('error', line);
  }
  warn(...line: unknown[]) {
    this.write('warn', line);
  }
  info(...line: unknown[]) {
    this.write('info', line);
  }
  debug(...line: unknown[]) {
    this.write('debug', line);
  }
  trace(...line: unknown[]) {
    this.write('trace', line);
  }
}

/**
 * Fastify's `childLoggerFactory`. A route with its own log level or serializers, or a logger that is
 * not pino (none configured), gets the usual child at once.
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as unknown as Logger;
  if (options.level || options.serializers || typeof parent.isLevelEnabled !== 'function') return logger.child(bindings, options);
  return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}

/**
 * Fastify's request lines as one access line per request (docs/operations.md, "Logs"): nothing when it
 * arrives; once it is answered, its method, path, address, status and time. The line's fields are only
 * these, so it skips the redaction every other line gets: with its wildcard paths, redaction cost a line
 * five times what the rest of writing it does. Failures keep Fastify's own lines.
 */
export class AccessLog extends LogController {
  private readonly unredacted = new WeakMap<object, Logger>();

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>) {
    if (error) return super.requestCompleted(error, request, reply, metadata);
    const log = this.loggerOf(request.server.log as unknown as Logger);
    if (!log?.isLevelEnabled('info')) return;
    // `req` goes through the `req` serializer (requestFields), as in every line that names a request.
    const fields = { reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    log.info(fields, 'request completed');
  }

  /** The listener's logger without redaction, made once; none when it is not pino (no logging configured). */
  private loggerOf(root: Logger): Logger | undefined {
    if (typeof root.isLevelEnabled !== 'function') return undefined;
    let log = this.unredacted.get(root);
    if (!log) {
      log = root.child({}, { redact: { paths: [] } });
      this.unredacted.set(root, log);
    }
    return log;
  }
}

/** How often a run of identical warnings is logged at most (the rest are counted, see `throttledWarning`). */
const REPEATED_WARNING_INTERVAL_MS = 10_000;

/**
 * A warning that repeats with every failed request during an incident (the store or Redis away):
 * the first of a run is logged at once, then at most one line per interval and `key`, carrying in
 * `suppressed` how many were left out since the line before.
 */
export function throttledWarning() {
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
    runs.set(id, { until: now + REPEATED_WARNING_INTERVAL_MS, suppressed: 0 });
  };
}
