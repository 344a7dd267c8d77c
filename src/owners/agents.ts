import type { Config } from '../config.js';
import { Forbidden, NotFound } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import { redirectOrigin } from '../oauth/redirect.js';
import type { Store } from '../store/index.js';
import type { OwnerAgent, OwnerAgentLastSignIn, OwnerWebsite } from '../store/owner-agents.js';
import type { ApprovalPolicy } from '../store/owners.js';
import { agentWrites, revokeAtLevel, rotateSecret } from '../tokens/revocation.js';

export interface OwnerAgentDeps {
  config: Pick<Config, 'owners'>;
  store: Pick<Store, 'ownerAgents' | 'auditLog' | 'grantRecords' | 'agents'>;
  events: Events;
}

// Another owner's agent is answered exactly like one that does not exist.
const noSuchAgent = (agentId: string) => new NotFound(`no agent with id ${agentId}`);

/** Checks that the agent is the owner's; NotFound otherwise, as for an agent that does not exist. */
export async function assertOwnAgent(deps: Pick<OwnerAgentDeps, 'store'>, userId: string, agentId: string): Promise<void> {
  if (!(await deps.store.ownerAgents.get(userId, agentId))) throw noSuchAgent(agentId);
}

/** The owner's agents, each with its newest sign-in and the websites it holds a live grant with. */
export async function listAgents(deps: Pick<OwnerAgentDeps, 'store'>, userId: string) {
  const { ownerAgents } = deps.store;
  const [agents, websites, lastSignIns] = await Promise.all([
    ownerAgents.list(userId),
    ownerAgents.websites(userId),
    ownerAgents.lastSignIns(userId),
  ]);
  return withActivity(agents, websites, lastSignIns);
}

/** One agent of the owner as listAgents shows it, read alone; another owner's is not found. */
export async function ownAgent(deps: Pick<OwnerAgentDeps, 'store'>, userId: string, agentId: string) {
  const { ownerAgents } = deps.store;
  const [agent, websites, lastSignIns] = await Promise.all([
    ownerAgents.get(userId, agentId),
    ownerAgents.websites(userId, agentId),
    ownerAgents.lastSignIns(userId, agentId),
  ]);
  if (!agent) throw noSuchAgent(agentId);
  return withActivity([agent], websites, lastSignIns)[0];
}

function withActivity(agents: OwnerAgent[], websites: OwnerWebsite[], lastSignIns: OwnerAgentLastSignIn[]) {
  return agents.map((agent) => ({
    ...agent,
    last_sign_in: lastOf(lastSignIns, agent.agent_id),
    websites: websites
      .filter((w) => w.agent_id === agent.agent_id)
      .map(({ redirect_uri, ...w }) => ({ ...w, redirect_origin: redirectOrigin(redirect_uri) })),
  }));
}

function lastOf(signIns: OwnerAgentLastSignIn[], agentId: string) {
  const found = signIns.find((s) => s.agent_id === agentId);
  if (!found) return null;
  const { agent_id: _agent, redirect_uri, ...rest } = found;
  return { ...rest, redirect_origin: redirectOrigin(redirect_uri) };
}

/** A new agent of the owner; its secret is in the answer and nowhere else. Off with OWNER_AGENT_CREATION=false. */
export async function createAgent(deps: OwnerAgentDeps, userId: string, name: string | null, context: EventContext) {
  if (!deps.config.owners.agentCreation) throw new Forbidden('only the operators create agents on this server');
  const agent = await deps.store.ownerAgents.create(userId, name);
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'agent_created', userId, agentId: agent.agent_id });
  deps.events.emit('agent.created', { user_id: userId, agent_id: agent.agent_id }, context);
  return { ...agent, last_sign_in: null, websites: [] };
}

export async function updateAgent(
  deps: OwnerAgentDeps,
  userId: string,
  agentId: string,
  patch: { name?: string | null; active?: boolean; approval_policy?: ApprovalPolicy | null },
  context: EventContext,
) {
  await assertOwnAgent(deps, userId, agentId);
  // Name and status as the operators change them: a deactivation ends the agent's grants (grant.ended).
  const { approval_policy: approvalPolicy, ...record } = patch;
  if (Object.keys(record).length > 0) await agentWrites(deps, context).update(agentId, record);
  const agent = await deps.store.ownerAgents.update(userId, agentId, approvalPolicy === undefined ? {} : { approval_policy: approvalPolicy });
  if (!agent) throw noSuchAgent(agentId);
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'agent_updated', userId, agentId, detail: { fields: Object.keys(patch) } });
  deps.events.emit('agent.updated', { user_id: userId, agent_id: agentId, fields: Object.keys(patch) }, context);
  return agent;
}

/** A new secret; unless `revokeGrants` is false, the agent's grants and sign-ins in flight end too, as an operator's rotation does. */
export async function rotateAgentSecret(deps: OwnerAgentDeps, userId: string, agentId: string, revokeGrants: boolean, context: EventContext) {
  const target = { level: 'agent', id: agentId, revokeGrants } as const;
  const agent = await rotateSecret(deps, target, () => deps.store.ownerAgents.rotateSecret(userId, agentId), context, 'owner');
  if (!agent) throw noSuchAgent(agentId);
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'agent_secret_rotated', userId, agentId, detail: { revoke_grants: revokeGrants } });
  deps.events.emit('agent.secret_rotated', { user_id: userId, agent_id: agentId, revoke_grants: revokeGrants }, context);
  return agent;
}

/** Deleting an agent ends its grants (grant.ended) and takes its sign-ins along, as when an operator does it. */
export async function deleteAgent(deps: OwnerAgentDeps, userId: string, agentId: string, context: EventContext) {
  await assertOwnAgent(deps, userId, agentId);
  if (!(await agentWrites(deps, context).remove(agentId))) throw noSuchAgent(agentId);
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'agent_deleted', userId, agentId });
  deps.events.emit('agent.deleted', { user_id: userId, agent_id: agentId }, context);
}

/** Ends the agent's grants with one website, and its sign-ins there in flight, on every instance at once. */
export async function revokeWebsite(deps: OwnerAgentDeps, userId: string, agentId: string, clientId: string, context: EventContext) {
  await assertOwnAgent(deps, userId, agentId);
  await revokeAtLevel(deps, 'website', [agentId, clientId], context, 'owner');
}

/** The owner's kill switch: every grant and every sign-in in flight of all their agents ends. */
export async function revokeAll(deps: OwnerAgentDeps, userId: string, context: EventContext) {
  await revokeAtLevel(deps, 'owner', userId, context, 'owner');
}
