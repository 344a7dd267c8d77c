import { z } from 'zod';
import { adminResource } from './resource.js';
import { atLeastOne, clientView, name, redirectUris } from './schemas.js';

/** A website's registration, as the admin API and the console take it. */
export const clientCreate = z.strictObject({ name, redirect_uris: redirectUris });
export const clientPatch = atLeastOne(
  z.strictObject({ name: name.optional(), redirect_uris: redirectUris.optional(), active: z.boolean().optional() }),
);

/** Registration of websites (OAuth clients). Secrets are returned once: at creation and rotation. */
export default adminResource({
  plural: 'clients',
  singular: 'client',
  secretField: 'client_secret',
  view: clientView,
  create: clientCreate,
  patch: clientPatch,
  store: (store) => store.clients,
});
