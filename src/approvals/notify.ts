import type { Config } from '../config.js';
import type { Events } from '../events/emitter.js';
import type { Mailer } from '../mail/mailer.js';
import { approvalRequestMessage } from '../mail/messages.js';
import { redirectOrigin } from '../oauth/redirect.js';
import type { Store } from '../store/index.js';

/**
 * Mails the owner when one of their agents' sign-ins starts waiting for them: a link to the
 * portal, where they decide. The mail carries nothing that approves: that takes the owner's
 * passkey or a fresh sign-in.
 */
export function mailOwnersOnApprovalRequests(
  events: Events,
  deps: { config: Pick<Config, 'issuer' | 'brand'>; store: Pick<Store, 'approvals'>; mailer: Mailer },
): void {
  events.on('sign-in.approval_requested', async ({ request_id }, { log }) => {
    const request = await deps.store.approvals.request(request_id);
    if (!request) return;
    const message = approvalRequestMessage({
      to: request.email,
      brand: deps.config.brand.name,
      link: `${deps.config.issuer}/account/approvals`,
      agent: request.agent_name ?? request.agent_id,
      model: request.model,
      website: request.client_name,
      origin: redirectOrigin(request.redirect_uri),
      matchCode: request.match_code,
      expiresAt: request.expires_at,
    });
    await deps.mailer.send(message, log);
  });
}
