import type { AuditEvent, OwnerHistoryRecord } from '../store/audit-log.js';

/** What a sentence of the history needs of its row. */
export type HistoryRow = Pick<OwnerHistoryRecord, 'event' | 'reason' | 'actor' | 'agent_name' | 'client_name' | 'detail'>;

interface Names {
  agent: string;
  website: string;
  /** Who acted on the owner's records: "You" or "An operator". */
  who: string;
}

// Why an agent was refused, as its owner would put it (the codes are the audit log's reasons).
const REFUSALS: Record<string, string> = {
  wrong_secret: 'it gave a wrong secret',
  secret_disabled: 'it gave its secret, but it signs in with keys only',
  unknown_key: 'it signed with a key that is not registered',
  wrong_key: 'its signature did not match its key',
  assertion_replayed: 'it sent a signature that had been used already',
  assertion_expired: 'its signature had expired',
  inactive_agent: 'it is deactivated',
  request_expired: 'the sign-in had expired',
  request_denied: 'the sign-in had been declined',
  request_taken: 'another agent had taken the sign-in',
  login_hint_mismatch: 'the website asked for another agent',
  email_not_verified: 'your email address is not verified yet',
};

// Why a grant ended (grants.revoked_reason), each a sentence with the names filled in.
const ENDINGS: Record<string, (n: Names) => string> = {
  owner_owner: () => 'You used the kill switch',
  owner_website: (n) => `You signed ${n.agent} out of ${n.website}`,
  owner_agent: (n) => `You signed ${n.agent} out of every website`,
  client_revocation: (n) => `${n.website} signed ${n.agent} out`,
  agent_deactivated: (n) => `${n.agent} was deactivated, which signed it out of ${n.website}`,
  agent_deleted: (n) => `${n.agent} was deleted, which signed it out of ${n.website}`,
  code_replay: (n) => `Sign-in code used twice: ${n.agent} signed out of ${n.website} for safety`,
  refresh_token_reuse: (n) => `Refresh token reused: ${n.agent} signed out of ${n.website} for safety`,
};

const SIGN_IN_METHODS: Record<string, string> = {
  email_link: 'You signed in with a link from your email',
  passkey: 'You signed in with a passkey',
};

const passkeyName = (row: HistoryRow) => `“${typeof row.detail?.name === 'string' ? row.detail.name : 'unnamed'}”`;

/** Each event of an owner's history in a sentence of their own words; the API keeps the codes. */
const SENTENCES: Record<AuditEvent, (n: Names, row: HistoryRow) => string> = {
  authorize_started: (n) => `A sign-in to ${n.website} started`,
  agent_authenticated: (n) => `${n.agent} proved who it is to sign in to ${n.website}`,
  agent_authentication_failed: (n, row) => `${n.agent} was refused: ${REFUSALS[row.reason ?? ''] ?? 'its credentials did not check out'}`,
  approval_requested: (n) => `${n.agent} asked for your approval to sign in to ${n.website}`,
  approved: (n) => `You approved ${n.agent}’s sign-in to ${n.website}`,
  completed: (n) => `${n.agent}’s sign-in to ${n.website} went through`,
  denied: (n) => `${n.agent}’s sign-in to ${n.website} was declined`,
  expired: (n) => `${n.agent}’s sign-in to ${n.website} expired before it finished`,
  token_issued: (n) => `${n.agent} signed in to ${n.website}`,
  refreshed: (n) => `${n.website} renewed ${n.agent}’s tokens`,
  reuse_detected: (n, row) => (ENDINGS[row.reason ?? ''] ?? ENDINGS.refresh_token_reuse)(n),
  revoked: (n, row) =>
    ENDINGS[row.reason ?? '']?.(n) ??
    (row.actor === 'admin' ? `An operator signed ${n.agent} out of ${n.website}` : `${n.agent} was signed out of ${n.website}`),
  agent_created: (n) => `${n.who} created ${n.agent}`,
  agent_updated: (n) => `${n.who} changed ${n.agent}’s settings`,
  agent_secret_rotated: (n) => `${n.who} gave ${n.agent} a new secret`,
  agent_deleted: (n) => `${n.who} deleted ${n.agent}`,
  agent_key_added: (n) => `${n.who} added a key to ${n.agent}`,
  agent_key_deleted: (n) => `${n.who} removed a key of ${n.agent}`,
  signing_key_added: (n) => `${n.who} added a request-signing key to ${n.agent}`,
  signing_key_deleted: (n) => `${n.who} removed a request-signing key of ${n.agent}`,
  client_created: (n) => `${n.website} was registered`,
  client_updated: (n) => `${n.website} was changed`,
  client_secret_rotated: (n) => `${n.website} got a new secret`,
  client_deleted: (n) => `${n.website} was removed`,
  resource_created: () => 'An MCP server was registered',
  resource_updated: () => 'An MCP server was changed',
  resource_deleted: () => 'An MCP server was removed',
  owner_signed_in: (_n, row) => SIGN_IN_METHODS[String(row.detail?.by)] ?? 'You signed in',
  owner_reauthenticated: () => 'You confirmed it is you with your passkey',
  owner_settings_changed: (n) => `${n.who} changed your settings`,
  owner_email_changed: (n) => `${n.who} moved your account to another email address`,
  passkey_added: (_n, row) => `You added the passkey ${passkeyName(row)}`,
  passkey_renamed: (_n, row) => `You renamed a passkey to ${passkeyName(row)}`,
  passkey_removed: (_n, row) => `You removed the passkey ${passkeyName(row)}`,
  client_sign_in_allowed: (n) => `You signed ${n.website} in as ${n.agent}`,
  client_sign_in_denied: (n) => `You declined a sign-in of ${n.website}`,
};

/** The sentence a history row reads as on the owner's History page. */
export function historyInWords(row: HistoryRow): string {
  const sentence = SENTENCES[row.event](
    { agent: row.agent_name ?? 'an agent', website: row.client_name ?? 'a website', who: row.actor === 'admin' ? 'An operator' : 'You' },
    row,
  );
  return sentence.charAt(0).toUpperCase() + sentence.slice(1);
}
