import type { Config } from '../config.js';
import { FreshAuthenticationRequired } from '../errors.js';
import type { Log } from '../logger.js';
import type { Mailer } from '../mail/mailer.js';
import { protectionLoweredMessage } from '../mail/messages.js';
import { replaceUnprintable } from '../protocol/unprintable.js';
import type { Store } from '../store/index.js';
import type { OwnerSession } from '../store/owner-sessions.js';
import { APPROVAL_POLICIES, type ApprovalPolicy } from '../store/owners.js';

/**
 * The owner's guard (docs/protocol.md, "Fresh verification"): a session is fresh while its last user
 * verification (an email-link sign-in, a passkey sign-in, or a confirmation with the passkey) is younger
 * than OWNER_FRESH_SECONDS. Approving without a passkey, moving the account to another address, and
 * every change that weakens the owner's protection need it: a stolen session cookie alone (or an agent
 * driving the owner's browser) must not be able to switch approval off or add a passkey of its own.
 */

/** What each approval policy means, as the portal's choices and the owner's mails say it. */
export const POLICY_CHOICES: Record<ApprovalPolicy, string> = {
  never: 'Never ask me',
  new_website: 'Ask me for new websites',
  always: 'Ask me every time',
};

export function isFresh(config: Pick<Config, 'owners'>, session: Pick<OwnerSession, 'authenticated_at'>): boolean {
  return Date.now() - session.authenticated_at.getTime() < config.owners.freshSeconds * 1000;
}

/** FreshAuthenticationRequired (403) unless the session is fresh; `what` names the action refused. */
export function assertFresh(config: Pick<Config, 'owners'>, session: Pick<OwnerSession, 'authenticated_at'>, what: string): void {
  if (isFresh(config, session)) return;
  const minutes = Math.max(1, Math.round(config.owners.freshSeconds / 60));
  throw new FreshAuthenticationRequired(
    `${what} needs a fresh confirmation that it is you: confirm with your passkey, or sign in again with a link from your email, then retry within ${minutes} minute${minutes === 1 ? '' : 's'}`,
  );
}

// always > new_website > never; anything else (a value the body's validation will refuse) counts as lowest.
const strictness = (policy: unknown) => APPROVAL_POLICIES.indexOf(policy as ApprovalPolicy);
const words = (policy: unknown) => `“${POLICY_CHOICES[policy as ApprovalPolicy] ?? String(policy)}”`;
const has = (body: unknown, field: string): body is Record<string, unknown> =>
  typeof body === 'object' && body !== null && Object.hasOwn(body, field);

export interface ProtectionDeps {
  store: Pick<Store, 'owners' | 'ownerAgents'>;
}

/**
 * What a change of the owner's settings (`body` as sent, not validated yet) would weaken, in words;
 * undefined when it weakens nothing: a lower approval policy, or the notices of new websites turned off.
 */
export async function settingsWeakening(deps: ProtectionDeps, userId: string, body: unknown): Promise<string | undefined> {
  if (!has(body, 'approval_policy') && !has(body, 'notify_new_website')) return undefined;
  const settings = await deps.store.owners.settings(userId);
  if (!settings) return undefined;
  const changes: string[] = [];
  if (has(body, 'approval_policy') && strictness(body.approval_policy) < strictness(settings.approval_policy)) {
    changes.push(`your approval of your agents’ sign-ins was lowered from ${words(settings.approval_policy)} to ${words(body.approval_policy)}`);
  }
  if (has(body, 'notify_new_website') && body.notify_new_website !== true && settings.notify_new_website) {
    changes.push('the mails about your agents’ first sign-in at a website were turned off');
  }
  return changes.length > 0 ? changes.join('; ') : undefined;
}

/**
 * What a change of one agent's settings would weaken, in words: its effective approval policy (its own,
 * or the owner's when null) lowered. undefined when not, or when the agent is not the owner's (404 later).
 */
export async function agentWeakening(deps: ProtectionDeps, userId: string, agentId: string, body: unknown): Promise<string | undefined> {
  if (!has(body, 'approval_policy')) return undefined;
  const [agent, settings] = await Promise.all([deps.store.ownerAgents.get(userId, agentId), deps.store.owners.settings(userId)]);
  if (!agent || !settings) return undefined;
  const before = agent.approval_policy ?? settings.approval_policy;
  const after = body.approval_policy === null ? settings.approval_policy : body.approval_policy;
  if (strictness(after) >= strictness(before)) return undefined;
  return `the approval of the sign-ins of your agent “${agent.name ?? agent.agent_id}” was lowered from ${words(before)} to ${words(after)}`;
}

/** Where a change came from, as the owner's mail tells it. */
export interface ChangeOrigin {
  address: string;
  userAgent: string | undefined;
}

/** Mails the owner, at once, that `change` weakened their protection, and from where; a failure is logged by the mailer. */
export function mailProtectionLowered(
  deps: { config: Pick<Config, 'issuer' | 'brand'>; mailer: Mailer },
  to: string,
  change: string,
  origin: ChangeOrigin,
  log: Log,
): void {
  const browser = replaceUnprintable(origin.userAgent ?? 'unknown', () => '?').slice(0, 200) || 'unknown';
  const message = protectionLoweredMessage({
    to,
    brand: deps.config.brand.name,
    change,
    at: new Date(),
    address: origin.address,
    browser,
    link: `${deps.config.issuer}/account/history`,
  });
  deps.mailer.send(message, log).catch(() => {});
}
