import type { Config } from '../config.js';
import type { Events } from '../events/emitter.js';
import type { Mailer } from '../mail/mailer.js';
import { newWebsiteMessage } from '../mail/messages.js';
import { redirectOrigin } from '../oauth/redirect.js';
import type { Store } from '../store/index.js';

/**
 * Subscriber of `grant.issued`: the first time one of an owner's agents signs in to a website, the
 * owner is mailed (once per agent and website, never per sign-in), unless they turned it off. Only
 * with SMTP_URL: in log-only mode nobody would read it.
 */
export function noticeNewWebsites(events: Events, deps: { config: Pick<Config, 'issuer' | 'brand'>; store: Pick<Store, 'owners'>; mailer: Mailer }) {
  if (deps.mailer.logOnly) return;
  events.on('grant.issued', async (grant, context) => {
    const notice = await deps.store.owners.claimNewWebsiteNotice(grant.agent_id, grant.client_id);
    if (!notice?.notify_new_website) return;
    const message = newWebsiteMessage({
      to: notice.email,
      brand: deps.config.brand.name,
      agent: notice.agent_name ?? grant.agent_id,
      website: notice.client_name,
      origin: redirectOrigin(notice.redirect_uri),
      model: grant.model,
      at: new Date(),
      // The agent's page in the portal, where each website has its Revoke button.
      link: `${deps.config.issuer}/account/agents/${encodeURIComponent(grant.agent_id)}`,
    });
    await deps.mailer.send(message, context.log);
  });
}
