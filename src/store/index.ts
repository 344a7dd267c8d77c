import type { GrantCache } from '../cache/grant-cache.js';
import type { Db } from '../db/types.js';
import { createAgentStore } from './agents.js';
import { createAuditStore } from './audit.js';
import { createClientStore } from './clients.js';
import { createConsoleSessionStore } from './console-sessions.js';
import { createGrantAdminStore } from './grant-admin.js';
import { createGrantStore } from './grants.js';
import { createKeyStore } from './keys.js';
import { createMaintenanceStore } from './maintenance.js';
import { createRequestStore } from './requests.js';

/** Everything the routes read or write goes through here; only src/store knows the SQL. */
export function createStore(db: Db, grantCache: GrantCache) {
  return {
    clients: createClientStore(db),
    agents: createAgentStore(db),
    grants: createGrantStore(db, grantCache),
    requests: createRequestStore(db),
    grantAdmin: createGrantAdminStore(db),
    audit: createAuditStore(db),
    maintenance: createMaintenanceStore(db),
    keys: createKeyStore(db),
    consoleSessions: createConsoleSessionStore(db),
  };
}

export type Store = ReturnType<typeof createStore>;
