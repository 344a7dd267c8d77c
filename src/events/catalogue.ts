/**
 * Every event the server emits in process (src/events/emitter.ts), with what it carries: ids and
 * names only, never a secret, code or token. Each is emitted once, by the code that made it happen,
 * after the store has recorded it; the audit table's rows are written by the database in the same
 * statement (migrations/003), so a subscriber never has to write them. src/README.md lists who emits
 * and who listens.
 */

/** Who a sign-in is for: the request (its wire name) and the website. */
interface SignIn {
  request_id: string;
  client_id: string;
}

/** A sign-in once an agent has authenticated it. */
interface AgentSignIn extends SignIn {
  agent_id: string;
  model: string;
}

/** One grant: one sign-in of one agent at one website, and the tokens it issues. */
export interface GrantFacts {
  grant_id: string;
  client_id: string;
  agent_id: string;
  model: string;
}

export interface EventPayloads {
  /** GET /authorize recorded a new sign-in and bound it to the browser. */
  'sign-in.started': SignIn;
  /** An agent proved who it is for a sign-in (pending -> authenticated). */
  'sign-in.authenticated': AgentSignIn;
  /** The sign-in waits for the agent's owner to approve it (their approval policy asks for it). */
  'sign-in.approval_requested': AgentSignIn;
  /** The agent's owner approved the sign-in with fresh proof that it is them; the browser may collect the code. */
  'sign-in.approved': AgentSignIn;
  /** The browser collected the code (authenticated -> completed). */
  'sign-in.completed': AgentSignIn;
  /**
   * The person pressed Deny on the approval page (`by: person`), or the agent's owner declined the sign-in
   * (`by: owner`); on the owner path before any agent signed in, `agent_id` and `model` are null.
   */
  'sign-in.denied': SignIn & { agent_id: string | null; model: string | null; by: 'person' | 'owner' };
  /**
   * A sign-in ran out of time; emitted once, by whoever noticed and recorded it (a read, or the purge).
   * `awaiting_owner`: it was still waiting for its owner's approval.
   */
  'sign-in.expired': SignIn & { agent_id: string | null; model: string | null; awaiting_owner: boolean };
  /** An agent's authentication was refused; `reason` is for the audit log only, never the caller. */
  'agent.authentication_failed': { request_id: string; agent_id: string; model: string; reason: string };
  /** A code was exchanged: the grant and its first tokens exist. */
  'grant.issued': GrantFacts;
  /** A refresh token was rotated (or a lost rotation retried) and a new pair issued. */
  'grant.refreshed': GrantFacts;
  /**
   * A grant was revoked, and every token it issued with it. `reason` is grants.revoked_reason:
   * `code_replay` and `refresh_token_reuse` (reuse detected), `client_revocation` (RFC 7009),
   * `admin_<level>` (the admin API and the console), `agent_deactivated` and `agent_deleted`. The
   * back-channel logout deliveries of an ending are written by the same statement (src/store/grants.ts).
   */
  'grant.ended': GrantFacts & { reason: string };
  /** One access token revoked on its own by its client (RFC 7009); its grant lives on. */
  'access-token.revoked': GrantFacts & { reason: 'client_revocation' };

  // The owner's facts: their history rows are written with the change (src/store), these are for everyone else.
  /** An owner session started, by an email link or a passkey. */
  'owner.signed_in': { user_id: string; method: 'email_link' | 'passkey' };
  /** The owner confirmed it is them with a passkey (step-up): the session is fresh. */
  'owner.stepped_up': { user_id: string };
  /** The owner ended this session, or every session of theirs (`everywhere`). */
  'owner.signed_out': { user_id: string; everywhere: boolean };
  /** The owner added or removed a passkey. */
  'owner.passkey_added': { user_id: string; passkey_id: string };
  'owner.passkey_removed': { user_id: string; passkey_id: string };
  /** The owner changed their settings; `fields` names what changed. */
  'owner.settings_changed': { user_id: string; fields: string[] };
  /** An owner created, changed (`fields`), gave a new secret to or deleted one of their agents in the portal. */
  'agent.created': { user_id: string; agent_id: string };
  'agent.updated': { user_id: string; agent_id: string; fields: string[] };
  'agent.secret_rotated': { user_id: string; agent_id: string; revoke_grants: boolean };
  'agent.deleted': { user_id: string; agent_id: string };

  // The operator's facts: back-channel logout deliveries (src/logout/sender.ts).
  /** A website took a logout token (2xx). */
  'logout.delivered': { jti: string; client_id: string; attempt: number };
  /** A website refused a logout token or did not answer; `given_up`: it will not be sent again. */
  'logout.refused': { jti: string; client_id: string; attempt: number; refusal: string; given_up: boolean };
}

export type EventName = keyof EventPayloads;

/** The reasons of a grant ended because a spent code or refresh token came back (RFC 9700 §4.14.2). */
export const REUSE_REASONS: readonly string[] = ['code_replay', 'refresh_token_reuse'];
