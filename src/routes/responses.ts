import type { FastifyReply } from 'fastify';
import { z } from 'zod';

/**
 * Pieces of the routes' response schemas, which both shape the OpenAPI document (GET /docs/json)
 * and serialize the replies: a JSON schema must declare every field its route sends, because
 * fields it does not name are dropped.
 */

/** The body of every JSON failure (src/errors.ts). */
export const errorBody = z.object({
  error: z.string().describe('machine-readable error code'),
  error_description: z.string().describe('what went wrong, for people'),
});

export const RATE_LIMITED = 'rate_limited: too many requests; Retry-After gives the seconds to wait';
export const UNAVAILABLE = 'temporarily_unavailable: the store is unreachable; Retry-After gives the seconds to wait';

/** The answers of every endpoint that takes a body, before it reads one. */
export const BODY_REFUSED = {
  413: 'invalid_request: the body is over 64 KiB',
  415: 'invalid_request: the content type is not one the endpoint takes',
};

/** JSON error responses by status, each described by the error codes it can carry. */
export function errorResponses(descriptions: Record<number, string>) {
  return Object.fromEntries(Object.entries(descriptions).map(([status, text]) => [status, errorBody.describe(text)]));
}

/** The failures of /introspect and /revoke, which take a token and authenticate the client. */
export const TOKEN_OPERATION_ERRORS = errorResponses({
  400: 'invalid_request: token is missing',
  401: 'invalid_client: unknown or inactive client, or wrong secret',
  ...BODY_REFUSED,
  429: RATE_LIMITED,
  503: UNAVAILABLE,
});

/** An HTML page (the browser routes render their errors as pages too). */
export const htmlPage = (description: string) => ({ description, content: { 'text/html': { schema: z.string() } } });

/** A response without a body: a redirect, or /revoke's empty 200. */
export const noBody = (description: string) => z.null().optional().describe(description);

/**
 * Route option for the hot endpoints (/userinfo, /introspect), whose handlers build every answer
 * from checked values: the response schemas still document the answers, but each one is
 * serialised as it is instead of being validated again on every request.
 */
export const serializeAsBuilt = () => (data: unknown) => JSON.stringify(data);

/** Sends an answer serialised beforehand (a JSON text with a JSON content type goes out as it is). */
export function sendJsonText(reply: FastifyReply, text: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(text);
}

/** Endpoints that take form-urlencoded bodies (RFC 6749) take JSON as well. */
export const FORM_OR_JSON = ['application/x-www-form-urlencoded', 'application/json'];

/** /token, /introspect and /revoke: client_secret_post (fields in the body) or HTTP Basic. */
export const CLIENT_AUTH: { [scheme: string]: string[] }[] = [{}, { clientSecretBasic: [] }];
