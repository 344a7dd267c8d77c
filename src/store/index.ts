import type { GrantCache } from '../cache/grant-cache.js';
import type { Db } from '../db/types.js';
import { createAgentKeyStore } from './agent-keys.js';
import { type AgentWithSecretHash, createAgentStore } from './agents.js';
import { createApprovalStore } from './approvals.js';
import { createAuditLogStore } from './audit-log.js';
import { createClientAgentStore } from './client-agents.js';
import { type ClientWithSecretHash, createClientStore, type StoredClientCredentials } from './clients.js';
import { createConsoleSessionStore } from './console-sessions.js';
import { createDpopProofStore } from './dpop-proofs.js';
import { createEmailLinkStore } from './email-links.js';
import { createGrantRecordStore } from './grant-records.js';
import { createGrantStore, type LiveGrant } from './grants.js';
import { createLogoutDeliveryStore } from './logout-deliveries.js';
import { createMaintenanceStore } from './maintenance.js';
import { createOwnerAgentStore } from './owner-agents.js';
import { createOwnerSessionStore } from './owner-sessions.js';
import { createOwnerStore } from './owners.js';
import { createPasskeyStore } from './passkeys.js';
import { createResourceStore } from './resources.js';
import { createServerKeyStore } from './server-keys.js';
import { createSignInStore } from './sign-ins.js';

/** The grant cache as the stores fill it: live grants, the clients that introspect, client and agent records. */
export type StoreCache = GrantCache<LiveGrant, StoredClientCredentials, ClientWithSecretHash, AgentWithSecretHash>;

/** Everything the routes read or write goes through here; only src/store knows the SQL. */
export function createStore(db: Db, grantCache: StoreCache) {
  return {
    clients: createClientStore(db, grantCache),
    agents: createAgentStore(db, grantCache),
    agentKeys: createAgentKeyStore(db),
    grants: createGrantStore(db, grantCache),
    signIns: createSignInStore(db),
    grantRecords: createGrantRecordStore(db),
    auditLog: createAuditLogStore(db),
    maintenance: createMaintenanceStore(db),
    serverKeys: createServerKeyStore(db),
    consoleSessions: createConsoleSessionStore(db),
    owners: createOwnerStore(db),
    ownerAgents: createOwnerAgentStore(db),
    ownerSessions: createOwnerSessionStore(db),
    emailLinks: createEmailLinkStore(db),
    passkeys: createPasskeyStore(db),
    approvals: createApprovalStore(db),
    logoutDeliveries: createLogoutDeliveryStore(db),
    resources: createResourceStore(db),
    dpopProofs: createDpopProofStore(db),
    clientAgents: createClientAgentStore(db),
  };
}

export type Store = ReturnType<typeof createStore>;
