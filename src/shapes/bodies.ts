import { z } from 'zod';
import { displayText } from '../protocol/text.js';

/** A name people give a record (an agent, a website): shown to people, so nothing unprintable. */
export const name = displayText(200);

/** A PATCH body must change something; an empty one is a mistake worth reporting. */
export const atLeastOne = <T extends z.ZodObject>(body: T) =>
  body.refine((b) => Object.keys(b).length > 0, `give at least one of: ${Object.keys(body.shape).join(', ')}`);

/** The optional body of a secret rotation; none (Fastify's null), or `{}`, revokes. */
export const rotateBody = z
  .strictObject({
    revoke_grants: z
      .boolean()
      .optional()
      .describe('default true: every grant and every sign-in in flight ends too, on every instance; false: only the old secret stops working'),
  })
  .nullish();
