import { z } from 'zod';
import { APPROVAL_POLICIES } from '../store/owners.js';

/** A person's answer to a waiting sign-in: on its page (the website's user) or in the portal (its owner). */
export const decision = z.enum(['approve', 'deny']);

/** When an owner is asked to approve their agents' sign-ins (src/store/owners.ts). */
export const approvalPolicy = z.enum(APPROVAL_POLICIES);
