import type { Db } from '../db/types.js';
import { createAgentStore } from './agents.js';
import { createAuditStore } from './audit.js';
import { createClientStore } from './clients.js';
import { createGrantAdminStore } from './grant-admin.js';
import { createGrantStore } from './grants.js';
import { createRequestStore } from './requests.js';

/** Everything the routes read or write goes through here; only src/store knows the SQL. */
export function createStore(db: Db) {
  return {
    clients: createClientStore(db),
    agents: createAgentStore(db),
    grants: createGrantStore(db),
    requests: createRequestStore(db),
    grantAdmin: createGrantAdminStore(db),
    audit: createAuditStore(db),
  };
}

export type Store = ReturnType<typeof createStore>;
