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

/** What a notice of an agent's first sign-in at a website tells its owner. */
export interface NewWebsiteNotice {
  email: string;
  notify_new_website: boolean;
  agent_name: string | null;
  client_name: string;
  redirect_uri: string;
}

/** Owners: the user records agents belong to, as their owners see them (migrations/020). */
/** What the owner may change of their settings: any of them, the rest stays. */
export interface OwnerSettingsPatch {
  approval_policy?: ApprovalPolicy;
  notify_new_website?: boolean;
}

export function createOwnerStore(db: Db) {
  return {
    async settings(userId: string): Promise<OwnerSettings | undefined> {
      const { rows } = await db.query<OwnerSettings>(`SELECT ${SETTINGS} FROM users WHERE id = $1`, [userId]);
      return rows[0];
    },

    /**
     * The first sign-in of this agent at this website claims its notice (migrations/021): the owner and
     * what to tell them, once; undefined every later time (or when the agent or website is gone).
     */
    async claimNewWebsiteNotice(agentId: string, clientId: string): Promise<NewWebsiteNotice | undefined> {
      const { rows } = await db.query<NewWebsiteNotice>(
        `WITH claimed AS (
           INSERT INTO owner_notices (agent_id, client_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING agent_id
         )
         SELECT u.email, u.notify_new_website, a.name AS agent_name, c.name AS client_name, c.redirect_uris[1] AS redirect_uri
         FROM claimed JOIN agents a ON a.id = claimed.agent_id JOIN users u ON u.id = a.user_id JOIN clients c ON c.id = $2`,
        [agentId, clientId],
      );
      return rows[0];
    },

    /**
     * An operator changes an owner's email (any case of the old one finds them); the address is
     * unverified until a link sent to the new one is used (trigger, migrations/020). 'taken' when another
     * owner has the new address; undefined when no owner has the old one.
     */
    async changeEmail(email: string, newEmail: string): Promise<{ user_id: string; email: string; email_verified: boolean } | 'taken' | undefined> {
      const { rows } = await db.query<{ user_id: string; email: string; email_verified: boolean; taken: boolean }>(
        `WITH target AS (SELECT id FROM users WHERE lower(email) = lower($1)),
         taken AS (SELECT EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($2) AND id NOT IN (SELECT id FROM target)) AS taken),
         changed AS (
           UPDATE users SET email = $2 WHERE id IN (SELECT id FROM target) AND NOT (SELECT taken FROM taken)
           RETURNING id AS user_id, email, email_verified_at IS NOT NULL AS email_verified
         )
         SELECT changed.*, taken.taken FROM taken LEFT JOIN changed ON true WHERE EXISTS (SELECT 1 FROM target)`,
        [email, newEmail],
      );
      if (!rows[0]) return undefined;
      if (rows[0].taken) return 'taken';
      const { taken: _, ...changed } = rows[0];
      return changed;
    },

    async updateSettings(userId: string, patch: OwnerSettingsPatch): Promise<OwnerSettings | undefined> {
      const { rows } = await db.query<OwnerSettings>(
        `UPDATE users SET approval_policy = coalesce($2, approval_policy), notify_new_website = coalesce($3, notify_new_website)
         WHERE id = $1 RETURNING ${SETTINGS}`,
        [userId, patch.approval_policy ?? null, patch.notify_new_website ?? null],
      );
      return rows[0];
    },
  };
}
