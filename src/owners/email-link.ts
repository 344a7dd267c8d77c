import type { Config } from '../config.js';
import { randomToken, sha256 } from '../crypto/secrets.js';
import { RateLimited } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import type { Mailer } from '../mail/mailer.js';
import { emailChangeLinkMessage, signInLinkMessage } from '../mail/messages.js';
import type { Store } from '../store/index.js';
import type { OwnerSession } from '../store/owner-sessions.js';
import { assertFresh } from './protection.js';

/** A sign-in link lives this long and works once (docs/security.md, "Owners"). */
export const LINK_TTL_SECONDS = 15 * 60;
// The limit per email counts the links sent to one address within this window.
const PER_EMAIL_WINDOW_SECONDS = 60 * 60;

export interface EmailLinkDeps {
  config: Pick<Config, 'issuer' | 'brand' | 'owners' | 'rateLimits'>;
  store: Pick<Store, 'emailLinks'>;
  mailer: Mailer;
}

/**
 * Someone asks for a sign-in link for `email`. The answer is the same whoever owns the address, or
 * no one, and takes the same time: the one statement that records the link does the same work either
 * way, and the mail goes out after the answer. Without OWNER_SIGNUP an address no one owns gets no
 * mail. Past the limit per email: RateLimited, whoever asks, while a link already sent still works.
 */
export async function requestEmailLink(
  deps: EmailLinkDeps,
  email: string,
  context: EventContext,
  /** Where the link leads with its token: the portal's link page, or back to a sign-in in progress (the owner path). */
  linkTo = (token: string) => `${deps.config.issuer}/account/email-link/callback?token=${token}`,
): Promise<void> {
  const token = await recordLink(deps, email);
  if (!token.ownerExists && !deps.config.owners.signup) return;
  const link = linkTo(token.value);
  const message = signInLinkMessage({ to: email, brand: deps.config.brand.name, link, minutes: LINK_TTL_SECONDS / 60 });
  // Not awaited: how long the SMTP server takes must not tell anything. A failure is logged by the mailer.
  deps.mailer.send(message, context.log).catch(() => {});
}

/**
 * A signed-in owner asks to move their account to `email`. Nothing changes until the link mailed
 * there is used (src/owner-flows/sign-in.ts): the account keeps a verified address throughout, and the
 * answer is the same whether or not another owner has the address (they learn nothing). Needs a
 * fresh session (src/owners/protection.ts), so a stolen one cannot move the account to its thief's mailbox.
 */
export async function requestEmailChange(
  deps: EmailLinkDeps,
  owner: Pick<OwnerSession, 'user_id' | 'authenticated_at'>,
  email: string,
  context: EventContext,
): Promise<void> {
  assertFresh(deps.config, owner, 'moving your account to another address');
  const token = await recordLink(deps, email, owner.user_id);
  const link = `${deps.config.issuer}/account/email-link/callback?token=${token.value}`;
  const message = emailChangeLinkMessage({ to: email, brand: deps.config.brand.name, link, minutes: LINK_TTL_SECONDS / 60 });
  deps.mailer.send(message, context.log).catch(() => {});
}

/** Records a new link to `email` within the limit per email (else RateLimited): its token, and whether an owner has the address. */
async function recordLink(deps: EmailLinkDeps, email: string, changeFor?: string) {
  const value = randomToken(32);
  const recorded = await deps.store.emailLinks.record({
    tokenHash: sha256(value),
    email,
    ttlSeconds: LINK_TTL_SECONDS,
    max: deps.config.rateLimits.emailLinkPerEmail || Number.MAX_SAFE_INTEGER,
    windowSeconds: PER_EMAIL_WINDOW_SECONDS,
    changeFor,
  });
  if (!recorded.recorded) throw new RateLimited(recorded.retryAfterSeconds);
  return { value, ownerExists: recorded.ownerExists };
}
