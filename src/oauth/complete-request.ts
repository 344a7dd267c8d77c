import type { FastifyBaseLogger } from 'fastify';
import { logAudit } from '../audit.js';
import { InvalidRequest } from '../errors.js';
import type { Services } from '../services.js';
import { redirectToClient } from './redirect.js';

/**
 * Issues the code for an authenticated request of this browser and returns the website's
 * redirect URL; undefined when the request was not authenticated, unexpired and this browser's.
 */
export async function tryCompleteRequest(
  { config, store, metrics }: Services,
  log: FastifyBaseLogger,
  requestId: string,
  browserHash: string,
): Promise<string | undefined> {
  const done = await store.requests.complete(requestId, browserHash, config.ttl.authCode);
  if (!done) return undefined;
  metrics.signIns.inc({ stage: 'completed' });
  logAudit(log, 'completed', { request_id: requestId, client_id: done.client_id, agent_id: done.agent_id, model: done.model });
  return redirectToClient(done.redirect_uri, { code: done.code, state: done.state, iss: config.issuer });
}

/** As tryCompleteRequest, for callers that have checked the request: failing now means a lost race. */
export async function completeRequest(services: Services, log: FastifyBaseLogger, requestId: string, browserHash: string) {
  const location = await tryCompleteRequest(services, log, requestId, browserHash);
  // Another tab completed it, or it expired in between.
  if (!location) throw new InvalidRequest('this sign-in can no longer be completed; start again from the website');
  return location;
}
