import { z } from 'zod';
import { adminResource } from './resource.js';
import { atLeastOne, clientView, name, redirectUris } from './schemas.js';

/** Registration of websites (OAuth clients). Secrets are returned once: at creation and rotation. */
export default adminResource({
  plural: 'clients',
  singular: 'client',
  secretField: 'client_secret',
  view: clientView,
  create: z.strictObject({ name, redirect_uris: redirectUris }),
  patch: atLeastOne(
    z.strictObject({ name: name.optional(), redirect_uris: redirectUris.optional(), active: z.boolean().optional() }),
  ),
  store: (store) => store.clients,
});
