import type { FastifyInstance, FastifyRequest } from 'fastify';
import { assertFresh, mailProtectionLowered } from '../owners/protection.js';
import { errorResponses } from '../routes/responses.js';
import { signedInOwner } from './guards.js';

/**
 * A route of the owner API that may weaken the owner's protection (docs/protocol.md, "Fresh
 * verification") says so with its `requireFresh` option:
 * - `true`: it always needs a fresh session, and changes nothing by itself (registration options);
 * - a string: it always needs one, and once it succeeded the owner is mailed that this happened;
 * - a function: given the request (its body parsed, not validated yet), what it would weaken in
 *   words, or undefined; only then does it need a fresh session, and the owner is mailed.
 * The check runs before the body's validation, so a stale session learns nothing from a 400. A
 * handler may refine `request.protectionChange` (say, with the name of what it removed).
 */
export type FreshRule = true | string | ((request: FastifyRequest) => Promise<string | undefined>);

declare module 'fastify' {
  interface FastifyRequest {
    /** What this request weakens, in words, once `requireFresh` found it does: mailed to the owner on success. */
    protectionChange?: string;
  }
  interface FastifyContextConfig {
    requireFresh?: FreshRule;
  }
}

/** The 403 a guarded route adds to its documented answers. */
export const FRESH_REQUIRED = errorResponses({
  403: 'fresh_authentication_required: this weakens your protection and needs a fresh confirmation (POST /account/api/reauthenticate, or a new email-link sign-in); forbidden: another origin',
});

/** For the owner API's scope: the `requireFresh` check before validation, the mail after a success. */
export function guardProtection(api: FastifyInstance) {
  const services = api.services;
  api.addHook('preValidation', async (request) => {
    const rule = request.routeOptions.config?.requireFresh;
    if (rule === undefined) return;
    const change = typeof rule === 'function' ? await rule(request) : rule;
    if (change === undefined) return;
    assertFresh(services.config, signedInOwner(request), 'this change');
    if (change !== true) request.protectionChange = change;
  });
  api.addHook('onResponse', async (request, reply) => {
    if (!request.protectionChange || reply.statusCode >= 300 || !request.owner) return;
    const origin = { address: request.ip, userAgent: request.headers['user-agent'] };
    mailProtectionLowered(services, request.owner.email, request.protectionChange, origin, request.log);
  });
}
