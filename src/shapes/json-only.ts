import type { FastifyRequest } from 'fastify';
import { UnsupportedMediaType } from '../errors.js';

/**
 * A state change that scripts make, never a form: its body must be JSON. A form post from another
 * site (which a browser sends without asking, CORS or not) cannot be JSON, so this is half of the
 * guard against cross-site requests; the other half checks the origin.
 */
export function requireJson(request: FastifyRequest): void {
  if (request.headers['content-type']?.split(';')[0].trim().toLowerCase() !== 'application/json') throw new UnsupportedMediaType();
}
