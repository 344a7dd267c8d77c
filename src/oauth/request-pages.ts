import type { FastifyReply } from 'fastify';
import { scopeGrantsEmail } from './scopes.js';

export interface RequestPageData {
  requestId: string;
  clientName: string;
  scope: string;
  expiresAt: Date;
  /** Approval page only. */
  approval?: { agentId: string; agentName: string | null; model: string; email: string; csrfToken: string };
}

/** Renders the waiting page (the agent has yet to authenticate) or the approval page. */
export function renderRequestPage(reply: FastifyReply, page: 'waiting' | 'approval', data: RequestPageData) {
  return reply.view(`${page}.eta`, {
    ...data,
    nonce: reply.cspNonce,
    expiresAt: data.expiresAt.toISOString(),
    sharesEmail: scopeGrantsEmail(data.scope),
    scopes: data.scope.split(' ').filter(Boolean),
    // Embedded in a script element: escape "<" so no value can close it.
    authRequestJson: JSON.stringify({ request_id: data.requestId }).replace(/</g, '\\u003c'),
  });
}
