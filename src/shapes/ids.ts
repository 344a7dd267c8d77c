import { z } from 'zod';
import { isPrintable } from '../protocol/unprintable.js';

/**
 * The one rule of a record's id in a request (an agent, a client, a resource, a passkey, a key, a
 * logout delivery): 1 to 200 characters, nothing unprintable. Ids this server mints are shorter and
 * of a fixed alphabet, but a client id may be an https URL (a Client ID Metadata Document), so the
 * rule only refuses what no id can be. In a path, such an id is answered 404 (src/plugins/error-handler.ts):
 * no record has it.
 */
export const NOT_AN_ID = 'cannot be an id: 1 to 200 characters, nothing unprintable';

export const recordId = () => z.string().min(1, NOT_AN_ID).max(200, NOT_AN_ID).refine(isPrintable, NOT_AN_ID);

/** The `:id` of a record's routes. */
export const idParams = z.object({ id: recordId() });
