import type { GrantCache } from '../cache/grant-cache.js';
import type { Db, Queryable } from '../db/types.js';
import type { SigningAlg } from '../protocol/signing.js';
import type { StoredClientCredentials, TokenEndpointAuthMethod } from './clients.js';

/** What the access-token checks need to know about a live grant, read in one statement (and kept by the grant cache). */
export interface LiveGrant {
  client_id: string;
  agent_id: string;
  /** The user the agent acts for now, and their email as it is now. */
  user_id: string;
  email: string;
  /** Milliseconds since the epoch: past it, the grant must be read again (a refresh may have extended it). */
  expires_at_ms: number;
  /** Access tokens of this grant revoked one by one (RFC 7009), usually none. */
  revoked_jtis: string[];
  /** Its website demands DPoP nonces (RFC 9449 §8). */
  dpop_nonce_required: boolean;
}

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
  /** The request named no DPoP key (dpop_jkt), or the exchange proved that one (RFC 9449 §10). */
  dpop_jkt_matches: boolean;
  /**
   * For the ID token: when the agent authenticated (seconds since the epoch; null once the request
   * is gone), the request's nonce, the user's email.
   */
  auth_time: number | null;
  nonce: string | null;
  email: string;
  /** A sign-in link sent to that email has been used since it was set (migrations/020). */
  email_verified: boolean;
  /** The website's registered ID token algorithm (null: none, RS256). */
  id_token_signed_response_alg: SigningAlg | null;
  /** The resource the sign-in asked for (RFC 8707), null for the website itself. */
  resource: string | null;
  /** False when the token request named another resource than the sign-in: nothing was issued. */
  resource_matches: boolean;
}

/** A code exchanged again within the reuse interval: the grant it issued, and whether this retry won. */
export interface RetriedCode extends RedeemedCode {
  grant_id: string;
  /** This retry won: the new pair exists (false when a concurrent retry beat it). */
  issued: boolean;
}

// What the ID token needs of a redeemed code `s` (columns user_id, client_id, request_id), read in
// the statement that redeemed it.
const REDEEMED_CODE = `floor(extract(epoch FROM r.authenticated_at))::float8 AS auth_time, r.nonce, u.email, c.id_token_signed_response_alg,
           u.email_verified_at IS NOT NULL AS email_verified
         FROM %s s JOIN users u ON u.id = s.user_id JOIN clients c ON c.id = s.client_id LEFT JOIN auth_requests r ON r.id = s.request_id`;
const redeemedCodeFrom = (cte: string) => REDEEMED_CODE.replace('%s', cte);

/** What an access token is signed from: one grant, i.e. one sign-in of one agent at one client. */
export interface GrantSubject {
  grant_id: string;
  client_id: string;
  agent_id: string;
  model: string;
  /** The scope of the refresh token involved (the grant's scope; refreshes never change it). */
  scope: string;
  /** The resource its tokens are for (RFC 8707); null or absent: the website itself. */
  resource?: string | null;
  /** The owner's email, read with a resource grant only: its JWT may carry it. */
  email?: string | null;
}

export interface ActiveRefreshToken extends GrantSubject {
  created_at: Date;
  expires_at: Date;
  /** The DPoP key the grant's tokens are bound to (migrations/080), or null. */
  dpop_jkt: string | null;
}

/** A grant that a statement has just ended (revoked), with grants.revoked_reason. */
export interface EndedGrant {
  grant_id: string;
  client_id: string;
  agent_id: string;
  model: string;
  reason: string;
}

/** Which grants to end: a condition on `grants` over `params`, and a WITH clause it may need. */
export interface GrantsToEnd {
  which: string;
  params: unknown[];
  reason: string;
  with?: string;
}

// A website's own revocation (RFC 7009) is the one ending it need not hear about: it asked for it.
const UNANNOUNCED_REASON = 'client_revocation';

/**
 * Every statement that ends grants is this one, run on `q` (the connection, or the transaction the
 * ending belongs to); it returns what it ended, for src/tokens/revocation.ts to announce
 * (`grant.ended`). The audit rows and the grant cache's notifications come from triggers
 * (migrations/003, 008). The same statement writes the back-channel logout outbox: one delivery per
 * ended grant whose website registered a backchannel_logout_uri, but for the website's own
 * revocation (migrations/050), so that it commits with the revocation or not at all.
 */
export async function endGrants(q: Queryable, { which, params, reason, with: prelude }: GrantsToEnd): Promise<EndedGrant[]> {
  const reasonParam = `$${params.length + 1}`;
  const { rows } = await q.query<EndedGrant>(
    `WITH ${prelude ? `${prelude}, ` : ''}ended AS (
       UPDATE grants SET revoked_at = now(), revoked_reason = ${reasonParam}
       WHERE revoked_at IS NULL AND ${which}
       RETURNING id AS grant_id, client_id, agent_id, model, revoked_reason AS reason
     ), logout AS (
       INSERT INTO logout_deliveries (jti, client_id, agent_id, sid, uri, reason)
       SELECT gen_random_uuid()::text, e.client_id, e.agent_id, e.grant_id, c.backchannel_logout_uri, e.reason
       FROM ended e JOIN clients c ON c.id = e.client_id
       WHERE c.backchannel_logout_uri IS NOT NULL AND ${reasonParam} <> '${UNANNOUNCED_REASON}'
     )
     SELECT grant_id, client_id, agent_id, model, reason FROM ended`,
    [...params, reason],
  );
  return rows;
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
// An access token's grant comes with its revoked jtis, so that it can be kept for all its tokens.
const liveGrant = (grantId: string) =>
  `SELECT g.client_id, g.agent_id, a.user_id, u.email, extract(epoch FROM g.expires_at)::float8 * 1000 AS expires_at_ms, c.dpop_nonce_required,
     ARRAY(SELECT r.jti FROM revoked_access_tokens r WHERE split_part(r.jti, '.', 1) = g.id) AS revoked_jtis
   FROM grants g ${GRANT_JOINS} JOIN users u ON u.id = a.user_id
   WHERE g.id = ${grantId} AND ${LIVE_GRANT}`;
const refreshToken = (tokenHash: string, clientId: string) =>
  `SELECT g.id AS grant_id, g.client_id, g.agent_id, g.model, g.resource, rt.scope, rt.created_at, rt.expires_at, g.dpop_jkt
   FROM refresh_tokens rt JOIN grants g ON g.id = rt.grant_id ${GRANT_JOINS}
   WHERE rt.token_hash = ${tokenHash} AND g.client_id = ${clientId} AND rt.used_at IS NULL AND rt.expires_at > now()
     AND ${LIVE_GRANT}`;

// A refresh's update of its grant, given the placeholders of the refresh and access token lifetimes.
// The grant must outlive its newest tokens. Extending it only once it falls short, and then by a
// tenth more, leaves its indexed expires_at alone on most refreshes: PostgreSQL then updates the
// row in place (HOT) instead of adding an entry to each of its five indexes.
const REFRESHED_GRANT = (refreshTtl: string, accessTtl: string) =>
  `last_refreshed_at = now(),
   expires_at = CASE WHEN expires_at >= now() + make_interval(secs => greatest(${refreshTtl}::int, ${accessTtl}::int)) THEN expires_at
                     ELSE now() + make_interval(secs => greatest(${refreshTtl}::int, ${accessTtl}::int) * 1.1) END`;

/** The rotation statements' resource condition ($9): a refresh may name its grant's resource, never another (RFC 8707 §2.2). */
const SAME_RESOURCE = `($9::text IS NULL OR g.resource = $9)`;
// A resource's token may carry the owner's email (src/tokens/resource-tokens.ts): read with a resource grant only.
const RESOURCE_EMAIL = `CASE WHEN g.resource IS NOT NULL THEN (SELECT u.email FROM users u WHERE u.id = a.user_id) END`;

/** What both rotation statements take. */
export interface Rotation {
  tokenHash: string;
  clientId: string;
  newTokenHash: string;
  lifetimes: TokenLifetimes;
  scope?: string[];
  /** The thumbprint of the request's DPoP key, or null without a proof. */
  dpopJkt: string | null;
  /** The resource the refresh names (canonical); undefined: the grant's own. */
  resource?: string;
}

/** $1 to $7 of both rotation statements: the token, its client, its successor, the lifetimes, the scope asked for, the DPoP key. */
const rotationParams = (input: Rotation) => [
  input.tokenHash,
  input.clientId,
  input.newTokenHash,
  input.lifetimes.refreshToken,
  input.lifetimes.accessToken,
  input.scope ?? null,
  input.dpopJkt,
];

// The sign-in named no DPoP key (dpop_jkt, RFC 9449 §10), or $11 (the exchange's key) is that one.
const DPOP_JKT_MATCHES = `EXISTS (SELECT 1 FROM auth_requests r WHERE r.id = ac.request_id AND (r.dpop_jkt IS NULL OR r.dpop_jkt = $11))`;

// A grant bound to a DPoP key is refreshed only with a proof of that key, and a website that must use
// DPoP only with a proof (RFC 9449 §5, §5.2); $7 is the request's key. Refused, nothing is spent.
const DPOP_KEY_FITS = `(g.dpop_jkt IS NULL OR g.dpop_jkt = $7) AND ($7::text IS NOT NULL OR NOT c.dpop_bound_access_tokens)`;

/** An access token's grant, if it is live and the token was not revoked on its own. */
const liveFor = (grant: LiveGrant | undefined, jti: string) => (grant && !grant.revoked_jtis.includes(jti) ? grant : undefined);

/** What the grant store keeps in the grant cache: live grants, and the clients that introspect. */
export type GrantStoreCache = Pick<GrantCache<LiveGrant, StoredClientCredentials>, 'read' | 'fill' | 'grant' | 'client' | 'keepGrant' | 'keepClient'>;

export function createGrantStore(db: Db, cache: GrantStoreCache) {
  /**
   * The client `clientId` ($1) and the row `lookup` (a query over $1 and `params`) finds for it;
   * `present` is a column that row always has, so its NULL means no row.
   */
  async function introspected<T>(clientId: string, lookup: string, params: unknown[], present: keyof T & string) {
    type Row = T & { asking_client_id: string; asking_secret_hash: string; asking_active: boolean; asking_method: TokenEndpointAuthMethod };
    const { rows } = await db.query<Row>(
      `SELECT c.id AS asking_client_id, c.secret_hash AS asking_secret_hash, c.active AS asking_active,
         c.token_endpoint_auth_method AS asking_method, t.*
       FROM clients c LEFT JOIN LATERAL (${lookup}) t ON true WHERE c.id = $1`,
      [clientId, ...params],
    );
    if (!rows[0]) return undefined;
    const { asking_client_id, asking_secret_hash, asking_active, asking_method, ...token } = rows[0];
    const client: StoredClientCredentials = {
      client_id: asking_client_id,
      secret_hash: asking_secret_hash,
      active: asking_active,
      token_endpoint_auth_method: asking_method,
    };
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
      /** The jti of the access token about to be issued: a retry revokes it (retryCodeExchange). */
      accessJti: string;
      refreshTokenHash: string;
      lifetimes: TokenLifetimes;
      /** The resource the token request names; undefined: the one of the sign-in, if any. */
      resource?: string;
      /** The thumbprint of the exchange's DPoP key, or null without a proof: the grant is bound to it. */
      dpopJkt: string | null;
    }): Promise<RedeemedCode | undefined> {
      // The key the sign-in named (dpop_jkt) is on its request, which outlives the code (src/store/maintenance.ts):
      // without the request, the code is refused. The grant comes back as /userinfo and /introspect read it, for
      // the cache: the website's first call with the new token then costs no round trip.
      type Exchanged = RedeemedCode & { user_id: string; dpop_nonce_required: boolean; client_active: boolean; expires_at_ms: number | null };
      const { rows } = await cache.fill(
        () =>
          db.query<Exchanged>(
            `WITH spent AS (
           UPDATE auth_codes ac SET used_at = now(),
             grant_id = CASE WHEN a.active AND ac.redirect_uri = $3 AND ac.code_challenge = $4
                               AND ($10::text IS NULL OR ac.resource IS NOT DISTINCT FROM $10) AND ${DPOP_JKT_MATCHES} THEN $5 END,
             access_jti = $9
           FROM agents a
           WHERE ac.code_hash = $1 AND ac.client_id = $2 AND ac.used_at IS NULL AND ac.expires_at > now()
             AND a.id = ac.agent_id
           RETURNING ac.request_id, ac.client_id, ac.agent_id, a.user_id, ac.scope, ac.model, ac.grant_id, ac.resource,
             a.active AS agent_active, ac.redirect_uri = $3 AS redirect_uri_matches, ac.code_challenge = $4 AS verifier_matches,
             ($10::text IS NULL OR ac.resource IS NOT DISTINCT FROM $10) AS resource_matches,
             ${DPOP_JKT_MATCHES} AS dpop_jkt_matches
         ), g AS (
           INSERT INTO grants (id, client_id, agent_id, user_id, request_id, scope, model, resource, dpop_jkt, expires_at)
           SELECT grant_id, client_id, agent_id, user_id, request_id, scope, model, resource, $11,
             now() + make_interval(secs => greatest($7::int, $8::int))
           FROM spent WHERE grant_id IS NOT NULL
           RETURNING id, scope, expires_at
         ), rt AS (
           INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
           SELECT $6, id, scope, now() + make_interval(secs => $7::int) FROM g
         )
         SELECT s.agent_id, s.scope, s.model, s.resource, s.resource_matches, s.agent_active, s.redirect_uri_matches, s.verifier_matches,
           s.dpop_jkt_matches, s.user_id, c.dpop_nonce_required, c.active AS client_active,
           (SELECT extract(epoch FROM g.expires_at)::float8 * 1000 FROM g) AS expires_at_ms, ${redeemedCodeFrom('spent')}`,
            [
              input.codeHash,
              input.clientId,
              input.redirectUri,
              input.codeChallenge,
              input.grantId,
              input.refreshTokenHash,
              input.lifetimes.refreshToken,
              input.lifetimes.accessToken,
              input.accessJti,
              input.resource ?? null,
              input.dpopJkt,
            ],
          ),
        ({ rows: [issued] }, since) => {
          if (issued?.expires_at_ms == null || !issued.client_active) return;
          const { agent_id, user_id, email, dpop_nonce_required, expires_at_ms } = issued;
          const grant = { client_id: input.clientId, agent_id, user_id, email, expires_at_ms, dpop_nonce_required, revoked_jtis: [] };
          cache.keepGrant(input.grantId, grant, since);
        },
      );
      if (!rows[0]) return undefined;
      const { user_id: _user, dpop_nonce_required: _nonce, client_active: _active, expires_at_ms: _expires, ...redeemed } = rows[0];
      return redeemed;
    },

    /**
     * A retried code exchange (docs/protocol.md): the same client presents again, within
     * `reuseIntervalSeconds` of its exchange, the code it spent, with the same redirect_uri and
     * code_verifier, because the answer carrying the tokens was lost (a 503 whose write committed
     * later, a reset connection, a crash). It qualifies only while the grant is live and its refresh
     * tokens were never used (the pair never reached the website). One statement then revokes the
     * pair the exchange issued last (its access token by jti, its refresh token discarded: presented
     * later, it is reuse) and issues a new one for the same grant. Undefined when the code does not
     * qualify (the caller treats it as reuse); `issued: false` when a concurrent retry won.
     */
    async retryCodeExchange(input: {
      codeHash: string;
      clientId: string;
      redirectUri: string;
      codeChallenge: string;
      /** The random part of the new access token's jti (the grant id is its first part). */
      accessJtiSuffix: string;
      refreshTokenHash: string;
      lifetimes: TokenLifetimes;
      reuseIntervalSeconds: number;
      /** The resource the retry names; undefined: the one of the sign-in, if any. */
      resource?: string;
      /** The retry's DPoP key: a grant bound to a key is retried only with that key. */
      dpopJkt: string | null;
    }): Promise<RetriedCode | undefined> {
      const { rows } = await db.query<RetriedCode>(
        `WITH retried AS (
           SELECT ac.code_hash, ac.grant_id, ac.access_jti, ac.request_id, g.client_id, g.agent_id, g.user_id, g.scope, g.model, g.resource
           FROM auth_codes ac JOIN grants g ON g.id = ac.grant_id ${GRANT_JOINS}
           WHERE ac.code_hash = $1 AND ac.client_id = $2 AND ac.redirect_uri = $3 AND ac.code_challenge = $4
             AND ($10::text IS NULL OR g.resource IS NOT DISTINCT FROM $10) AND g.dpop_jkt IS NOT DISTINCT FROM $11
             AND ac.access_jti IS NOT NULL AND ac.used_at > now() - make_interval(secs => $8::int) AND ${LIVE_GRANT}
             AND NOT EXISTS (SELECT 1 FROM refresh_tokens rt WHERE rt.grant_id = g.id AND rt.used_at IS NOT NULL AND NOT rt.discarded)
         ), discarded AS (
           UPDATE refresh_tokens unused SET used_at = now(), discarded = true FROM retried
           WHERE unused.grant_id = retried.grant_id AND unused.used_at IS NULL
           RETURNING unused.grant_id
         ), revoked AS (
           INSERT INTO revoked_access_tokens (jti, expires_at, reason)
           SELECT access_jti, now() + make_interval(secs => $7::int), 'code_exchange_retried' FROM retried
           WHERE EXISTS (SELECT 1 FROM discarded)
           ON CONFLICT (jti) DO NOTHING
         ), successor AS (
           INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
           SELECT $6, grant_id, scope, now() + make_interval(secs => $9::int) FROM retried WHERE EXISTS (SELECT 1 FROM discarded)
         ), noted AS (
           UPDATE auth_codes SET access_jti = retried.grant_id || '.' || $5 FROM retried
           WHERE auth_codes.code_hash = retried.code_hash AND EXISTS (SELECT 1 FROM discarded)
         )
         SELECT s.grant_id, s.agent_id, s.scope, s.model, s.resource, true AS resource_matches, true AS agent_active,
           true AS redirect_uri_matches, true AS verifier_matches, true AS dpop_jkt_matches, EXISTS (SELECT 1 FROM discarded) AS issued, ${redeemedCodeFrom('retried')}`,
        [
          input.codeHash,
          input.clientId,
          input.redirectUri,
          input.codeChallenge,
          input.accessJtiSuffix,
          input.refreshTokenHash,
          input.lifetimes.accessToken,
          input.reuseIntervalSeconds,
          input.lifetimes.refreshToken,
          input.resource ?? null,
          input.dpopJkt,
        ],
      );
      return rows[0];
    },

    /**
     * A spent code or refresh token presented again means it leaked: revoke the grant behind it, and
     * with it every token it issued (RFC 6749 §4.1.2; OAuth 2.1 §4.3.1 refresh token reuse).
     */
    revokeIfSpent(kind: keyof typeof SPENT, hash: string): Promise<EndedGrant[]> {
      return endGrants(db, { which: `id = (${SPENT[kind]})`, params: [hash], reason: REUSE_REASON[kind] });
    },

    /**
     * Rotation: spends the presented refresh token and issues its successor with the same scope
     * (RFC 6749 §6), in one statement (one round trip, atomic without a transaction). A requested
     * `scope` that is not within the token's spends nothing, so the presented token stays usable.
     * Undefined when the token is unknown, spent, expired, of another client, of a dead grant, when
     * the client's secret does not match, or when the scope was refused (the caller finds out which).
     */
    async rotateRefreshToken(
      input: Rotation & {
        /**
         * SHA-256 of the secret the client presented: the token is spent only if it matches. Null for a
         * client that has authenticated otherwise already (a public client, private_key_jwt).
         */
        clientSecretHash: string | null;
        /** The request's proof carried a good server nonce: a website that demands one (RFC 9449 §8) is refused without. */
        dpopNonced: boolean;
      },
    ): Promise<(GrantSubject & { client: StoredClientCredentials }) | undefined> {
      const { rows } = await db.query<GrantSubject & { secret_hash: string; client_active: boolean }>(
        `WITH spent AS (
           UPDATE refresh_tokens rt SET used_at = now()
           FROM grants g ${GRANT_JOINS}
           WHERE rt.token_hash = $1 AND rt.used_at IS NULL AND rt.expires_at > now()
             AND g.id = rt.grant_id AND g.client_id = $2 AND ($8::text IS NULL OR c.secret_hash = $8) AND ${LIVE_GRANT}
             AND ($6::text[] IS NULL OR $6::text[] <@ string_to_array(rt.scope, ' ')) AND ${SAME_RESOURCE} AND ${DPOP_KEY_FITS}
             AND ($7::text IS NULL OR $10::boolean OR NOT c.dpop_nonce_required)
           RETURNING rt.grant_id, rt.scope, g.client_id, g.agent_id, g.model, g.resource, ${RESOURCE_EMAIL} AS email,
             c.secret_hash, c.active AS client_active
         ), successor AS (
           INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
           SELECT $3, grant_id, scope, now() + make_interval(secs => $4::int) FROM spent
         ), refreshed AS (
           UPDATE grants SET ${REFRESHED_GRANT('$4', '$5')} FROM spent WHERE grants.id = spent.grant_id
         )
         SELECT grant_id, client_id, agent_id, model, scope, resource, email, secret_hash, client_active FROM spent`,
        [...rotationParams(input), input.clientSecretHash, input.resource ?? null, input.dpopNonced],
      );
      if (!rows[0]) return undefined;
      // The client as the statement read it, for the caller to authenticate as every client endpoint does.
      const { secret_hash, client_active, ...grant } = rows[0];
      return { ...grant, client: { client_id: grant.client_id, secret_hash, active: client_active } };
    },

    /**
     * A retried rotation (reuse interval, RFC 9700 §4.14.2): the client presents again the refresh
     * token it spent at most `reuseIntervalSeconds` ago, because the answer carrying the successor was
     * lost (a timeout, a reset connection, a crash). The token qualifies only while nothing of its
     * family was spent after it, i.e. that successor never came back. Its unused successor is then
     * discarded and a new one issued, in one statement. A discarded successor counts as spent at the
     * instant its parent was: presenting it later is reuse (theft), while its parent, still the last
     * token spent, may be retried again.
     * Undefined when the token does not qualify (the caller treats it as reuse); `issued: false` when
     * it qualified but a concurrent retry discarded the same successor first.
     */
    async rotateRetriedRefreshToken(
      input: Rotation & {
        /** `clientId` is already authenticated. */
        reuseIntervalSeconds: number;
      },
    ): Promise<(GrantSubject & { issued: boolean }) | undefined> {
      const { rows } = await db.query<GrantSubject & { issued: boolean }>(
        `WITH retried AS (
           SELECT rt.grant_id, rt.scope, rt.used_at, g.client_id, g.agent_id, g.model, g.resource, ${RESOURCE_EMAIL} AS email
           FROM refresh_tokens rt JOIN grants g ON g.id = rt.grant_id ${GRANT_JOINS}
           WHERE rt.token_hash = $1 AND g.client_id = $2 AND ${LIVE_GRANT} AND ${SAME_RESOURCE} AND ${DPOP_KEY_FITS}
             AND NOT rt.discarded AND rt.used_at > now() - make_interval(secs => $8::int)
             AND ($6::text[] IS NULL OR $6::text[] <@ string_to_array(rt.scope, ' '))
             AND NOT EXISTS (SELECT 1 FROM refresh_tokens later WHERE later.grant_id = rt.grant_id AND later.used_at > rt.used_at)
         ), discarded AS (
           UPDATE refresh_tokens unused SET used_at = retried.used_at, discarded = true FROM retried
           WHERE unused.grant_id = retried.grant_id AND unused.used_at IS NULL
           RETURNING unused.grant_id
         ), successor AS (
           INSERT INTO refresh_tokens (token_hash, grant_id, scope, expires_at)
           SELECT $3, grant_id, scope, now() + make_interval(secs => $4::int) FROM retried WHERE EXISTS (SELECT 1 FROM discarded)
         ), refreshed AS (
           UPDATE grants SET ${REFRESHED_GRANT('$4', '$5')}
           FROM retried WHERE grants.id = retried.grant_id AND EXISTS (SELECT 1 FROM discarded)
         )
         SELECT grant_id, client_id, agent_id, model, scope, resource, email, EXISTS (SELECT 1 FROM discarded) AS issued FROM retried`,
        [...rotationParams(input), input.reuseIntervalSeconds, input.resource ?? null],
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
     * Introspection of an access token (already verified as a JWT): the asking client, and the
     * token's live grant if it is that client's. From the grant cache, or one round trip.
     */
    async introspectAccessToken(clientId: string, grantId: string, jti: string): Promise<Introspected<LiveGrant> | undefined> {
      const read = await cache.read(
        () => {
          const client = cache.client(clientId);
          const token = client && cache.grant(grantId);
          return token && { client, token };
        },
        () => introspected<LiveGrant>(clientId, `${liveGrant('$2')} AND g.client_id = $1`, [grantId], 'agent_id'),
        (found, since) => {
          if (found) cache.keepClient(found.client, since);
          if (found?.token) cache.keepGrant(grantId, found.token, since);
        },
      );
      return read && { client: read.client, token: read.token?.client_id === clientId ? liveFor(read.token, jti) : undefined };
    },

    /**
     * Whether an access token (already verified as a JWT) is still good: its grant is live and its
     * jti was not revoked. With the user's email as it is now. From the grant cache, or one query.
     */
    async findAccessGrant(grantId: string, jti: string): Promise<LiveGrant | undefined> {
      const grant = await cache.read(
        () => cache.grant(grantId),
        async () => (await db.query<LiveGrant>(liveGrant('$1'), [grantId])).rows[0],
        (found, since) => found && cache.keepGrant(grantId, found, since),
      );
      return liveFor(grant, jti);
    },

    /** RFC 7009 for one access token; kept until the token would have expired anyway. */
    async revokeAccessToken(jti: string, expiresAt: Date): Promise<void> {
      await db.query(`INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING`, [jti, expiresAt]);
    },

    /** RFC 7009 for a refresh token: the whole family goes, if the token is this client's. */
    revokeRefreshToken(tokenHash: string, clientId: string): Promise<EndedGrant[]> {
      return endGrants(db, {
        which: 'client_id = $2 AND id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = $1)',
        params: [tokenHash, clientId],
        reason: 'client_revocation',
      });
    },
  };
}
