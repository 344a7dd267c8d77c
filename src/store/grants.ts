import type { Db } from '../db/types.js';
import type { StoredClientCredentials } from './clients.js';

/** Lifetimes in seconds of what a grant issues; the grant lives as long as its newest token. */
export interface TokenLifetimes {
  refreshToken: number;
  accessToken: number;
}

/** An authorization code as it was at the moment it was spent, and how it fared against the checks. */
export interface RedeemedCode {
  agent_id: string;
  scope: string;
  model: string;
  agent_active: boolean;
  redirect_uri_matches: boolean;
  verifier_matches: boolean;
  /** All three checks passed: the grant and its first refresh token exist. */
  issued: boolean;
}

/** What an access token is signed from: one grant, i.e. one sign-in of one agent at one client. */
export interface GrantSubject {
  grant_id: string;
  client_id: string;
  agent_id: string;
  model: string;
  /** The scope of the refresh token involved (the grant's scope; refreshes never change it). */
  scope: string;
}

export interface ActiveRefreshToken extends GrantSubject {
  created_at: Date;
  expires_at: Date;
}

/** A grant that a statement has just revoked, for the audit log line (the row is the trigger's). */
export interface RevokedGrant {
  grant_id: string;
  client_id: string;
  agent_id: string;
  model: string;
  reason: string;
}
export const REVOKED_COLUMNS = 'id AS grant_id, client_id, agent_id, model, revoked_reason AS reason';

export interface ActiveAccessGrant {
  client_id: string;
  agent_id: string;
  email: string;
}

/** The client asking to introspect, read (to authenticate it) in the same round trip as the token. */
export interface Introspected<T> {
  client: StoredClientCredentials;
  /** The token's live record, only when the token belongs to that client. */
  token?: T;
}

// A grant's tokens are good only while the grant is neither revoked nor expired and its agent and
// client are still active (a deleted agent or client takes its grants with it: ON DELETE CASCADE).
export const GRANT_JOINS = `JOIN agents a ON a.id = g.agent_id JOIN clients c ON c.id = g.client_id`;
export const LIVE_GRANT = `g.revoked_at IS NULL AND g.expires_at > now() AND a.active AND c.active`;

// The grant that a spent code issued, or that a spent refresh token belongs to.
const SPENT = {
  code: `SELECT grant_id FROM auth_codes WHERE code_hash = $1 AND used_at IS NOT NULL`,
  refresh_token: `SELECT grant_id FROM refresh_tokens WHERE token_hash = $1 AND used_at IS NOT NULL`,
};
// grants.revoked_reason; the audit trigger reports these as reuse_detected (migrations/003).
const REUSE_REASON = { code: 'code_replay', refresh_token: 'refresh_token_reuse' } as const;

// The lookups behind an access token and a refresh token; the placeholders are the caller's.
const accessGrant = (grantId: string, jti: string) =>
  `SELECT g.client_id, g.agent_id, u.email
   FROM grants g ${GRANT_JOINS} JOIN users u ON u.id = a.user_id
   WHERE g.id = ${grantId} AND ${LIVE_GRANT}
     AND NOT EXISTS (SELECT 1 FROM revoked_access_tokens r WHERE r.jti = ${jti})`;
const refreshToken = (tokenHash: string, clientId: string) =>
  `SELECT g.id AS grant_id, g.client_id, g.agent_id, g.model, rt.scope, rt.created_at, rt.expires_at
   FROM refresh_tokens rt JOIN grants g ON g.id = rt.grant_id ${GRANT_JOINS}
   WHERE rt.token_hash = ${tokenHash} AND g.client_id = ${clientId} AND rt.used_at IS NULL AND rt.expires_at > now()
     AND ${LIVE_GRANT}`;

export function createGrantStore(db: Db) {
  /**
   * The client `clientId` ($1) and the row `lookup` (a query over $1 and `params`) finds for it;
   * `present` is a column that row always has, so its NULL means no row.
   */
  async function introspected<T>(clientId: string, lookup: string, params: unknown[], present: keyof T & string) {
    type Row = T & { asking_client_id: string; asking_secret_hash: string; asking_active: boolean };
    const { rows } = await db.query<Row>(
      `SELECT c.id AS asking_client_id, c.secret_hash AS asking_secret_hash, c.active AS asking_active, t.*
       FROM clients c LEFT JOIN LATERAL (${lookup}) t ON true WHERE c.id = $1`,
      [clientId, ...params],
    );
    if (!rows[0]) return undefined;
    const { asking_client_id, asking_secret_hash, asking_active, ...token } = rows[0];
    const client = { client_id: asking_client_id, secret_hash: asking_secret_hash, active: asking_active };
    return { client, token: (token as T)[present] === null ? undefined : (token as T) };
  }

  return {
    /**
     * Spends the code and, if the agent is still active and the redirect_uri and PKCE challenge
     * match, creates the grant and its first refresh token: one statement, so one round trip and
     * atomic without a transaction. A concurrent second exchange waits on the row lock and then
     * finds the code used. A refused code stays spent: a second try gets no second chance.
     * The challenge is compared in SQL: it is no secret (it travelled in the browser's URL).
     * Undefined when no unspent, unexpired code of this client has that hash.
     */
    async exchangeCode(input: {
      codeHash: string;
      clientId: string;
      redirectUri: string;
      /** S256 of the presented code_verifier. */
      codeChallenge: string;
      grantId: string;
      refreshTokenHash: string;
      lifetimes: TokenLifetimes;
    }): Promise<RedeemedCode | undefined> {
      const { rows } = await db.query<RedeemedCode>(
        `WITH spent AS (
           UPDATE auth_codes ac SET used_at = now(),
             grant_id = CASE WHEN a.active AND ac.redirect_uri = $3 AND ac.code_challenge = $4 THEN $5 END
           FROM agents a
           WHERE ac.code_hash = $1 AND ac.client_id = $2 AND ac.used_at IS NULL AND ac.expires_at > now()
             AND a.id = ac.agent_id
           RETURNING ac.request_id, ac.client_id, ac.agent_id, a.user_id, ac.scope, ac.model, ac.grant_id,
             a.active AS agent_active, ac.redirect_uri = $3 AS redirect_uri_matches, ac.code_challenge = $4 AS verifier_matches
         ), g AS (
           INSERT INTO grants (id, client_id, agent_id, user_id, request_id, scope, model, expires_at)
           SELECT grant_id, client_id, agent_id, user_id, request_id, scope, model,
             now() + make_interval(secs => greatest($7::int, $8::int))
           FROM spent WHERE grant_id IS NOT NULL
           RETURNING id, scope
         ), rt AS (
           INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
           SELECT $6, id, scope, now() + make_interval(secs => $7::int) FROM g
         )
         SELECT agent_id, scope, model, agent_active, redirect_uri_matches, verifier_matches,
           grant_id IS NOT NULL AS issued
         FROM spent`,
        [
          input.codeHash, input.clientId, input.redirectUri, input.codeChallenge, input.grantId,
          input.refreshTokenHash, input.lifetimes.refreshToken, input.lifetimes.accessToken,
        ],
      );
      return rows[0];
    },

    /**
     * A spent code or refresh token presented again means it leaked: revoke the grant behind it, and
     * with it every token it issued (RFC 6749 §4.1.2; OAuth 2.1 §4.3.1 refresh token reuse).
     */
    async revokeIfSpent(kind: keyof typeof SPENT, hash: string): Promise<RevokedGrant | undefined> {
      const { rows } = await db.query<RevokedGrant>(
        `UPDATE grants SET revoked_at = now(), revoked_reason = $2 WHERE revoked_at IS NULL AND id = (${SPENT[kind]})
         RETURNING ${REVOKED_COLUMNS}`,
        [hash, REUSE_REASON[kind]],
      );
      return rows[0];
    },

    /**
     * Rotation: spends the presented refresh token and issues its successor with the same scope
     * (RFC 6749 §6), in one statement (one round trip, atomic without a transaction). A requested
     * `scope` that is not within the token's spends nothing, so the presented token stays usable.
     * Undefined when the token is unknown, spent, expired, of another client, of a dead grant, when
     * the client's secret does not match, or when the scope was refused (the caller finds out which).
     */
    async rotateRefreshToken(input: {
      tokenHash: string;
      clientId: string;
      /** SHA-256 of the secret the client presented: the token is spent only if it matches. */
      clientSecretHash: string;
      newTokenHash: string;
      lifetimes: TokenLifetimes;
      scope?: string[];
    }): Promise<GrantSubject | undefined> {
      const { rows } = await db.query<GrantSubject>(
        `WITH spent AS (
           UPDATE refresh_tokens rt SET used_at = now()
           FROM grants g ${GRANT_JOINS}
           WHERE rt.token_hash = $1 AND rt.used_at IS NULL AND rt.expires_at > now()
             AND g.id = rt.grant_id AND g.client_id = $2 AND c.secret_hash = $7 AND ${LIVE_GRANT}
             AND ($6::text[] IS NULL OR $6::text[] <@ string_to_array(rt.scope, ' '))
           RETURNING rt.grant_id, rt.scope, g.client_id, g.agent_id, g.model
         ), successor AS (
           INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
           SELECT $3, grant_id, scope, now() + make_interval(secs => $4::int) FROM spent
         ), refreshed AS (
           -- The grant must outlive its newest tokens. Extending it only once it falls short, and then
           -- by a tenth more, leaves its indexed expires_at alone on most refreshes: PostgreSQL then
           -- updates the row in place (HOT) instead of adding an entry to each of its five indexes.
           UPDATE grants SET last_refreshed_at = now(),
             expires_at = CASE WHEN expires_at >= now() + make_interval(secs => greatest($4::int, $5::int)) THEN expires_at
                               ELSE now() + make_interval(secs => greatest($4::int, $5::int) * 1.1) END
           FROM spent WHERE grants.id = spent.grant_id
         )
         SELECT grant_id, client_id, agent_id, model, scope FROM spent`,
        [
          input.tokenHash, input.clientId, input.newTokenHash, input.lifetimes.refreshToken, input.lifetimes.accessToken,
          input.scope ?? null, input.clientSecretHash,
        ],
      );
      return rows[0];
    },

    /** The live refresh token with this hash, issued to this client. */
    async findRefreshToken(tokenHash: string, clientId: string): Promise<ActiveRefreshToken | undefined> {
      const { rows } = await db.query<ActiveRefreshToken>(refreshToken('$1', '$2'), [tokenHash, clientId]);
      return rows[0];
    },

    /**
     * Introspection of a refresh token in one round trip: the asking client, and the live refresh
     * token with this hash if it was issued to that client. Undefined when there is no such client.
     */
    async introspectRefreshToken(clientId: string, tokenHash: string): Promise<Introspected<ActiveRefreshToken> | undefined> {
      return introspected<ActiveRefreshToken>(clientId, refreshToken('$2', '$1'), [tokenHash], 'grant_id');
    },

    /**
     * Introspection of an access token (already verified as a JWT) in one round trip: the asking
     * client, and the token's live grant if it is that client's.
     */
    async introspectAccessToken(clientId: string, grantId: string, jti: string): Promise<Introspected<ActiveAccessGrant> | undefined> {
      return introspected<ActiveAccessGrant>(clientId, `${accessGrant('$2', '$3')} AND g.client_id = $1`, [grantId, jti], 'agent_id');
    },

    /**
     * One query decides whether an access token (already verified as a JWT) is still good: its
     * grant is live and its jti was not revoked. It also reads the user's email as it is now.
     */
    async findAccessGrant(grantId: string, jti: string): Promise<ActiveAccessGrant | undefined> {
      const { rows } = await db.query<ActiveAccessGrant>(accessGrant('$1', '$2'), [grantId, jti]);
      return rows[0];
    },

    /** RFC 7009 for one access token; kept until the token would have expired anyway. */
    async revokeAccessToken(jti: string, expiresAt: Date): Promise<void> {
      await db.query(`INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING`, [
        jti,
        expiresAt,
      ]);
    },

    /** RFC 7009 for a refresh token: the whole family goes, if the token is this client's. */
    async revokeRefreshToken(tokenHash: string, clientId: string): Promise<RevokedGrant | undefined> {
      const { rows } = await db.query<RevokedGrant>(
        `UPDATE grants SET revoked_at = now(), revoked_reason = 'client_revocation'
         WHERE revoked_at IS NULL AND client_id = $2 AND id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1)
         RETURNING ${REVOKED_COLUMNS}`,
        [tokenHash, clientId],
      );
      return rows[0];
    },
  };
}
