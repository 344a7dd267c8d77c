import { AccessDenied, InvalidRequest } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import { redirectToClient } from '../oauth/redirect.js';
import { assertFresh } from '../owners/protection.js';
import { SIGN_IN_ERRORS } from '../protocol/sign-in.js';
import type { ClientAgent } from '../store/client-agents.js';
import type { Client } from '../store/clients.js';
import type { Store } from '../store/index.js';
import type { OwnerSession } from '../store/owner-sessions.js';
import { bindingHash } from './browser-binding.js';
import { type BrowserSignIn, complete, type SignInDeps } from './sign-in.js';

/**
 * The owner path (docs/protocol.md, "People's MCP clients"): on the authorization page of a client
 * that no agent drives (a person's MCP client), the agent's owner signs in themselves, with a passkey or
 * an email link, and lends that sign-in to an agent of theirs made for that client: one per owner and
 * client, with no credential of its own. Whoever signs in is still an agent with an owner; the owner
 * proved it is them in the browser the sign-in is bound to, within OWNER_FRESH_SECONDS.
 */

export interface OwnerSignInDeps extends SignInDeps {
  store: SignInDeps['store'] & Pick<Store, 'clientAgents'>;
}

/** The owner as the owner path needs them: who, and when they last proved it. */
export type SigningOwner = Pick<OwnerSession, 'user_id' | 'authenticated_at'>;

/**
 * Whether a client's authorization page offers the owner path: a website whose registration says so,
 * or a public client that named itself by a metadata document or registered itself. Never a sign-in
 * that names its agent (an agent's own document, or a website's login_hint): that agent signs in.
 */
export function offersOwnerSignIn(
  client: Pick<Client, 'registration' | 'token_endpoint_auth_method' | 'owner_sign_in'>,
  loginHint: string | null | undefined,
): boolean {
  if (loginHint) return false;
  return client.owner_sign_in || (client.registration !== 'admin' && client.token_endpoint_auth_method === 'none');
}

/** The client and resource of a sign-in on the owner path; InvalidRequest when its client does not offer it. */
export async function ownerPathOf(
  deps: { store: Pick<Store, 'clients' | 'resources'> },
  details: Pick<BrowserSignIn['details'], 'client_id' | 'login_hint' | 'resource'>,
) {
  const client = await deps.store.clients.get(details.client_id);
  if (!client || !offersOwnerSignIn(client, details.login_hint)) throw new InvalidRequest('this app does not offer signing in as the owner');
  const resource = details.resource ? await deps.store.resources.get(details.resource) : undefined;
  return { client, resource };
}

/** A sign-in the owner may still answer: pending, for no named agent. */
function assertOpen({ details }: BrowserSignIn) {
  if (details.status !== 'pending' || details.login_hint) throw new InvalidRequest('this sign-in is not waiting for its owner');
}

/**
 * The owner lets the client act as their agent: the agent for this owner and client is made (named
 * `name`) unless it exists, authenticates the sign-in, and the code is issued; returns the client's
 * redirect URL. Needs a fresh owner session, as an approval does. A deactivated agent stays so.
 */
export async function lendSignIn(deps: OwnerSignInDeps, browser: BrowserSignIn, owner: SigningOwner, name: string, context: EventContext) {
  assertOpen(browser);
  assertFresh(deps.config, owner, 'letting an app act as your agent');
  const { details, requestId, secret } = browser;
  const agent = await deps.store.clientAgents.getOrCreate(owner.user_id, details.client_id, name, details.resource);
  if (!agent.active) throw new AccessDenied('your agent for this app is deactivated; activate it in your account to sign in with it', 400);
  const facts = { userId: owner.user_id, agentId: agent.agent_id, clientId: details.client_id };
  if (agent.created)
    await deps.store.auditLog.recordAction({ actor: 'owner', event: 'agent_created', ...facts, detail: { client_id: details.client_id } });
  // The model an agent reports; here the program the person uses, as it names itself.
  const model = details.client_name.slice(0, 200);
  if (!(await deps.store.signIns.authenticateByOwner(requestId, bindingHash(secret), agent.agent_id, model))) {
    throw new InvalidRequest('this sign-in can no longer be completed; start again from the app');
  }
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'client_sign_in_allowed', ...facts, detail: { request_id: requestId } });
  deps.events.emit('sign-in.authenticated', { request_id: requestId, client_id: details.client_id, agent_id: agent.agent_id, model }, context);
  return complete(deps, browser, context);
}

/**
 * What the owner path does once the owner is known: completes at once when their agent for this
 * client exists and their policy does not ask (returns the redirect URL), or returns the agent (or
 * undefined, none yet) for the page to ask.
 */
export async function passOrAsk(
  deps: OwnerSignInDeps,
  browser: BrowserSignIn,
  owner: SigningOwner,
  context: EventContext,
): Promise<{ location: string } | { ask: ClientAgent | undefined }> {
  assertOpen(browser);
  const { details } = browser;
  const agent = await deps.store.clientAgents.get(owner.user_id, details.client_id, details.resource);
  if (!agent || agent.asks || !agent.active) return { ask: agent };
  return { location: await lendSignIn(deps, browser, owner, agent.name ?? details.client_name, context) };
}

/** The owner pressed Deny: the sign-in ends as access_denied, and the browser goes back to the client with the error. */
export async function refuseAsOwner(deps: OwnerSignInDeps, browser: BrowserSignIn, owner: SigningOwner, context: EventContext) {
  assertOpen(browser);
  const denied = await deps.store.signIns.denyPending(browser.requestId, bindingHash(browser.secret));
  if (!denied) throw new InvalidRequest('this sign-in can no longer be answered; start again from the app');
  await deps.store.auditLog.recordAction({
    actor: 'owner',
    event: 'client_sign_in_denied',
    userId: owner.user_id,
    clientId: denied.client_id,
    detail: { request_id: browser.requestId },
  });
  const facts = { request_id: browser.requestId, client_id: denied.client_id, agent_id: null, model: null };
  deps.events.emit('sign-in.denied', { ...facts, by: 'owner' }, context);
  return redirectToClient(denied.redirect_uri, {
    error: SIGN_IN_ERRORS.accessDenied,
    error_description: 'the owner denied the sign-in',
    state: denied.state,
    iss: deps.config.issuer,
  });
}
