import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isStoreUnavailable } from '../db/unavailable.js';
import {
  InvalidRequest,
  NotFound,
  OAuthError,
  PayloadTooLarge,
  ServerError,
  ServiceUnavailable,
  UnsupportedMediaType,
  UriTooLong,
} from '../errors.js';
import { throttledWarning } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { renderErrorPage } from '../pages/sign-in-pages.js';
import { NOT_AN_ID } from '../shapes/ids.js';
import { routeLabel } from './metrics.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Browser-facing route: errors render as the HTML error page instead of JSON. */
    html?: boolean;
  }
}

// During an outage every request fails the same way: a few lines say so, not one per request.
const warnStoreUnavailable = throttledWarning();

const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  array: 'a list',
  object: 'an object',
  boolean: 'true or false',
};

interface ValidationIssue {
  keyword?: string;
  instancePath?: string;
  message?: string;
  params?: { expected?: string; minimum?: number | bigint; maximum?: number | bigint; origin?: string; values?: unknown[] };
}

/** What is wrong with one value, in the caller's words rather than the validator's. */
function problem({ keyword, message = '', params = {} }: ValidationIssue): string {
  const { expected, minimum, maximum, origin, values } = params;
  const chars = origin === 'string' ? ' characters' : origin === 'array' ? ' values' : '';
  switch (keyword) {
    case 'invalid_type':
      return message.endsWith('received undefined') ? 'is required' : `must be ${TYPE_WORDS[expected ?? ''] ?? expected}`;
    case 'too_small':
      return origin === 'string' && Number(minimum) === 1 ? 'must not be empty' : `must be at least ${minimum}${chars}`;
    case 'too_big':
      return `must be at most ${maximum}${chars}`;
    case 'invalid_value':
      return values ? `must be one of: ${values.join(', ')}` : 'has a value that is not allowed';
    case 'unrecognized_keys':
      return message.replace(/^Unrecognized keys?/, 'has unknown fields');
    default:
      // Our own refinements already speak plainly ("must be an id: …"); the validator's may not.
      return /^[a-z]/.test(message) ? message : 'is not valid';
  }
}

function describeValidation(err: FastifyError): string {
  const first = err.validation?.[0] as ValidationIssue | undefined;
  const name = first?.instancePath?.replace(/^\//, '').replace(/\//g, '.');
  const where = err.validationContext === 'querystring' ? 'query parameter' : err.validationContext === 'headers' ? 'header' : 'field';
  if (!first) return 'the request is not valid';
  return name ? `the "${name}" ${where} ${problem(first)}` : `the ${err.validationContext === 'querystring' ? 'query' : 'body'} ${problem(first)}`;
}

/** Turns anything thrown into `{error, error_description}` (docs/protocol.md, Errors); never a stack trace. */
export function toOAuthError(err: FastifyError, request: FastifyRequest): OAuthError {
  if (err instanceof OAuthError) return err;
  if (err.validation) {
    // An id no record can have, in the path (src/shapes/ids.ts): there is no such record.
    const first = err.validation[0] as ValidationIssue | undefined;
    if (err.validationContext === 'params' && first?.message === NOT_AN_ID) return new NotFound('no such record: the id cannot exist');
    return new InvalidRequest(describeValidation(err));
  }
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new UnsupportedMediaType();
  }
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new PayloadTooLarge();
  }
  // Fastify's message would repeat the whole path back.
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return new UriTooLong();
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new InvalidRequest(err.message || 'malformed request');
  }
  // PostgreSQL refuses NUL in text (22021): the value came from the request, and no field accepts it.
  if (err.code === '22021') return new InvalidRequest('text must not contain NUL characters');
  if (isStoreUnavailable(err)) {
    // Not under `err`: pino would add an empty stack to a plain object there.
    warnStoreUnavailable(request.log, { error: { code: err.code, message: err.message } }, 'store unavailable', String(err.code));
    return new ServiceUnavailable();
  }
  request.log.error({ err }, 'unhandled error');
  return new ServerError();
}

/** The counter of failed requests (src/metrics.ts), which every error reply counts in. */
export type FailureCounter = Metrics['failures'];

export async function sendError(failures: FailureCounter, error: OAuthError, request: FastifyRequest, reply: FastifyReply, html: boolean) {
  failures.inc({ error: error.error, route: routeLabel(request) });
  reply.code(error.statusCode).headers(error.headers);
  if (html) {
    return renderErrorPage(reply, error);
  }
  return reply.send(error.toJSON());
}

export default fp(async function errorHandler(app: FastifyInstance, { failures }: { failures: FailureCounter }) {
  // A browser sent to a browser route with the wrong method (a form POST to /authorize) gets the page too.
  const browserPaths = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (route.config?.html) browserPaths.add(route.url);
  });
  const path = (request: FastifyRequest) => request.url.split('?')[0];
  const isPage = (request: FastifyRequest) => Boolean(request.routeOptions.config?.html) || browserPaths.has(path(request));

  app.setErrorHandler((err: FastifyError, request, reply) => sendError(failures, toOAuthError(err, request), request, reply, isPage(request)));
  app.setNotFoundHandler((request, reply) =>
    sendError(failures, new NotFound(`no endpoint ${request.method} ${path(request)}`), request, reply, isPage(request)),
  );
});
