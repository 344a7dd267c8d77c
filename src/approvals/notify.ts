import type { Config } from '../config.js';
import type { Events } from '../events/emitter.js';
import type { Mailer } from '../mail/mailer.js';
import { approvalRequestMessage } from '../mail/messages.js';
import { redirectOrigin } from '../oauth/redirect.js';
import type { Store } from '../store/index.js';

/** At most one approval mail per owner in this many seconds (docs/security.md: 30 sign-ins were 30 mails). */
export const APPROVAL_MAIL_WINDOW_SECONDS = 60;

/**
 * Mails the owner when one of their agents' sign-ins starts waiting for them: a link to the
 * portal, where they decide. The mail carries nothing that approves: that takes the owner's
 * passkey or a fresh sign-in. Mails coalesce through the store, across instances: a sign-in that
 * starts within a minute of the last mail waits in the portal's list, and the mail says how many wait.
 */
export function mailOwnersOnApprovalRequests(
  events: Events,
  deps: { config: Pick<Config, 'issuer' | 'brand'>; store: Pick<Store, 'approvals'>; mailer: Mailer },
): void {
  events.on('sign-in.approval_requested', async ({ request_id }, { log }) => {
    const request = await deps.store.approvals.request(request_id);
    if (!request) return;
    const claimed = await deps.store.approvals.claimMail(request.user_id, APPROVAL_MAIL_WINDOW_SECONDS);
    if (!claimed) return void log.info({ request_id }, 'approval mail coalesced: the sign-in waits in the portal');
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
      waiting: claimed.waiting,
    });
    await deps.mailer.send(message, log);
  });
}
