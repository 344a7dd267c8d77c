import type { Config } from '../config.js';
import type { Events } from '../events/emitter.js';
import type { Log } from '../logger.js';
import type { Mailer } from '../mail/mailer.js';
import { approvalRequestMessage } from '../mail/messages.js';
import { redirectOrigin } from '../oauth/redirect.js';
import type { Store } from '../store/index.js';

/**
 * Mails the owner when one of their agents' sign-ins starts waiting for them: a link to the
 * portal, where they decide. The mail carries nothing that approves: that takes the owner's
 * passkey or a fresh sign-in. Mails coalesce through the store, so across instances: at most one
 * per owner per `APPROVAL_MAIL_INTERVAL_SECONDS` (docs/security.md: 30 sign-ins were 30 mails),
 * saying how many sign-ins wait. A sign-in that starts within the interval waits in the portal's
 * list; when it is over, one more mail tells of those still waiting (from whichever instance gets
 * there first; a process that stops meanwhile leaves it to the others).
 */
export function mailOwnersOnApprovalRequests(
  events: Events,
  deps: { config: Pick<Config, 'issuer' | 'brand' | 'owners'>; store: Pick<Store, 'approvals'>; mailer: Mailer },
): void {
  // The owners this process tries again for when their interval is over: one timer each.
  const later = new Map<string, NodeJS.Timeout>();

  async function mailOwner(userId: string, log: Log): Promise<void> {
    const claim = await deps.store.approvals.claimMail(userId, deps.config.owners.approvalMailIntervalSeconds);
    if (!claim.claimed) {
      if (!claim.untold || later.has(userId)) return;
      log.info('approval mail coalesced: the sign-in waits in the portal');
      const retry = () => {
        later.delete(userId);
        mailOwner(userId, log).catch((err: Error) => log.warn({ err: { message: err.message } }, 'approval mail failed'));
      };
      later.set(userId, setTimeout(retry, Math.max(1, claim.reopensInSeconds) * 1000).unref());
      return;
    }
    const request = await deps.store.approvals.request(claim.requestId);
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
      waiting: claim.waiting,
      intervalSeconds: deps.config.owners.approvalMailIntervalSeconds,
    });
    await deps.mailer.send(message, log);
  }

  events.on('sign-in.approval_requested', async ({ request_id }, { log }) => {
    const request = await deps.store.approvals.request(request_id);
    if (request) await mailOwner(request.user_id, log);
  });
}
