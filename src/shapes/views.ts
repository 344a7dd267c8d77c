import { z } from 'zod';

/** A passkey as its owner sees it: never its public key or credential id. */
export const passkeyView = z.object({ id: z.string(), name: z.string(), created_at: z.date(), last_used_at: z.date().nullable() });
