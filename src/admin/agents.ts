import { z } from 'zod';
import { atLeastOne, name } from '../shapes/bodies.js';
import { agentWrites } from '../tokens/revocation.js';
import { adminResource } from './resource.js';
import { agentView } from './schemas.js';

/** An agent's registration, as the admin API and the console take it. */
export const agentCreate = z.strictObject({ email: z.email().max(320), name: name.nullish() });
// A null name clears it; the email is fixed, since it names the user the agent acts for.
// secret_enabled false makes the agent key-only: it signs in with an assertion, its secret is refused.
export const agentPatch = atLeastOne(
  z.strictObject({ name: name.nullable().optional(), active: z.boolean().optional(), secret_enabled: z.boolean().optional() }),
);

/** Registration of agents; the email names the user record that the agent belongs to. */
export default adminResource({
  plural: 'agents',
  singular: 'agent',
  secretField: 'agent_secret',
  view: agentView,
  create: agentCreate,
  patch: agentPatch,
  records: (services, context) => agentWrites(services, context),
});
