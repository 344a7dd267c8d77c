import type { Db } from '../db/types.js';

export const APPROVAL_POLICIES = ['never', 'new_website', 'always'] as const;
export type ApprovalPolicy = (typeof APPROVAL_POLICIES)[number];

/** What an owner sees and sets of themselves. */
export interface OwnerSettings {
  email: string;
  email_verified: boolean;
  approval_policy: ApprovalPolicy;
  notify_new_website: boolean;
}

const SETTINGS = `email, email_verified_at IS NOT NULL AS email_verified, approval_policy, notify_new_website`;

/** Owners: the user records agents belong to, as their owners see them (migrations/020). */
export function createOwnerStore(db: Db) {
  return {
    async settings(userId: string): Promise<OwnerSettings | undefined> {
      const { rows } = await db.query<OwnerSettings>(`SELECT ${SETTINGS} FROM users WHERE id = $1`, [userId]);
      return rows[0];
    },

    async updateSettings(
      userId: string,
      patch: { approval_policy?: ApprovalPolicy; notify_new_website?: boolean },
    ): Promise<OwnerSettings | undefined> {
      const { rows } = await db.query<OwnerSettings>(
        `UPDATE users SET approval_policy = coalesce($2, approval_policy), notify_new_website = coalesce($3, notify_new_website)
         WHERE id = $1 RETURNING ${SETTINGS}`,
        [userId, patch.approval_policy ?? null, patch.notify_new_website ?? null],
      );
      return rows[0];
    },
  };
}
