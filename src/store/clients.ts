import type { CachedClient, CachedGrant, GrantCache } from '../cache/grant-cache.js';
import { generateId, generateSecret, sha256 } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';
import type { SigningAlg } from '../protocol/signing.js';

/** How a client came to be: an operator registered it, it is a Client ID Metadata Document, or it registered itself (RFC 7591). */
export type Registration = 'admin' | 'metadata_document' | 'dynamic';
/** How it authenticates at /token, /introspect and /revoke. */
export type TokenEndpointAuthMethod = 'client_secret_post' | 'none' | 'private_key_jwt';

export interface Client {
  client_id: string;
  name: string;
  redirect_uris: string[];
  registration: Registration;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  /** The algorithm of its ID tokens and logout tokens; null: ID_TOKEN_SIGNING_ALG. */
  id_token_signed_response_alg: SigningAlg | null;
  /** Where it hears that a grant ended (OpenID Connect Back-Channel Logout 1.0); null: nowhere. */
  backchannel_logout_uri: string | null;
  /** It must use DPoP (RFC 9449 §5.2): its token requests without a proof are refused. */
  dpop_bound_access_tokens: boolean;
  /** A website that offers the owner path on its authorization page (docs/protocol.md, "People's MCP clients"). */
  owner_sign_in: boolean;
  /** Its DPoP proofs must carry a server nonce (RFC 9449 §8), at /token and at /userinfo for its tokens. */
  dpop_nonce_required: boolean;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** What client authentication reads; never leaves the server. */
export interface StoredClientCredentials {
  client_id: string;
  secret_hash: string;
  active: boolean;
  /** Absent: client_secret_post. */
  token_endpoint_auth_method?: TokenEndpointAuthMethod;
}

/** A client's public keys for private_key_jwt (RFC 7523): a JWK Set, or where to fetch one. */
export interface ClientKeys {
  jwks: { keys: unknown[] } | null;
  jwks_uri: string | null;
}

/** A client that is not a website an operator registered: the fields of its document or registration. */
export interface PublicClientFields extends ClientKeys {
  name: string;
  redirect_uris: string[];
  token_endpoint_auth_method: 'none' | 'private_key_jwt';
}

export interface ClientWithSecretHash extends Client {
  secret_hash: string;
}

const COLUMNS =
  'id AS client_id, name, redirect_uris, registration, token_endpoint_auth_method, id_token_signed_response_alg, backchannel_logout_uri, dpop_bound_access_tokens, dpop_nonce_required, owner_sign_in, active, created_at, updated_at';

/** What a registration sets; in a patch, null clears an optional field. */
export interface ClientFields {
  name: string;
  redirect_uris: string[];
  id_token_signed_response_alg?: SigningAlg | null;
  backchannel_logout_uri?: string | null;
  dpop_bound_access_tokens?: boolean;
  owner_sign_in?: boolean;
  dpop_nonce_required?: boolean;
}

// Clients without a shared secret: the digest of one nobody is ever told (migrations/061).
const unknownSecretHash = () => sha256(generateSecret('aa_none'));

/** A record shared by every reader of the cache: frozen, so that none can change it for the others. */
function frozen(client: ClientWithSecretHash): ClientWithSecretHash {
  Object.freeze(client.redirect_uris);
  return Object.freeze(client);
}

/** What the client store keeps in the grant cache: client records. */
export type ClientStoreCache = Pick<GrantCache<CachedGrant, CachedClient, ClientWithSecretHash>, 'read' | 'clientRecord' | 'keepClientRecord'>;

export function createClientStore(db: Db, cache: ClientStoreCache) {
  /**
   * A client as /authorize and /token read it on every sign-in: from the grant cache, which hears of every
   * change to a client row (migrations/100), or one query. Unknown ids are never kept.
   */
  const withSecret = (id: string) =>
    cache.read(
      () => cache.clientRecord(id),
      async () => {
        const { rows } = await db.query<ClientWithSecretHash>(`SELECT ${COLUMNS}, secret_hash FROM clients WHERE id = $1`, [id]);
        return rows[0] && frozen(rows[0]);
      },
      (found, since) => found && cache.keepClientRecord(found, since),
    );
  return {
    async create(input: ClientFields) {
      const clientSecret = generateSecret('aa_cs');
      const { rows } = await db.query<Client>(
        `INSERT INTO clients (id, name, secret_hash, redirect_uris, id_token_signed_response_alg, backchannel_logout_uri, dpop_bound_access_tokens, owner_sign_in, dpop_nonce_required)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
        [
          generateId('client'),
          input.name,
          sha256(clientSecret),
          input.redirect_uris,
          input.id_token_signed_response_alg ?? null,
          input.backchannel_logout_uri ?? null,
          input.dpop_bound_access_tokens ?? false,
          input.owner_sign_in ?? false,
          input.dpop_nonce_required ?? false,
        ],
      );
      return { ...rows[0], client_secret: clientSecret };
    },

    async get(id: string): Promise<Client | undefined> {
      const found = await withSecret(id);
      if (!found) return undefined;
      const { secret_hash: _, ...client } = found;
      return client;
    },

    /** For client authentication: includes the secret hash, never leaves the server. */
    getWithSecret: withSecret,

    async list(): Promise<Client[]> {
      const { rows } = await db.query<Client>(`SELECT ${COLUMNS} FROM clients ORDER BY created_at, id`);
      return rows;
    },

    async update(id: string, patch: Partial<ClientFields> & { active?: boolean }) {
      const { rows } = await db.query<Client>(
        `UPDATE clients SET name = coalesce($2, name), redirect_uris = coalesce($3, redirect_uris),
           active = coalesce($4, active),
           id_token_signed_response_alg = CASE WHEN $5 THEN $6 ELSE id_token_signed_response_alg END,
           backchannel_logout_uri = CASE WHEN $7 THEN $8 ELSE backchannel_logout_uri END,
           dpop_bound_access_tokens = coalesce($9, dpop_bound_access_tokens), owner_sign_in = coalesce($10, owner_sign_in),
           dpop_nonce_required = coalesce($11, dpop_nonce_required), updated_at = now()
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [
          id,
          patch.name ?? null,
          patch.redirect_uris ?? null,
          patch.active ?? null,
          patch.id_token_signed_response_alg !== undefined,
          patch.id_token_signed_response_alg ?? null,
          patch.backchannel_logout_uri !== undefined,
          patch.backchannel_logout_uri ?? null,
          patch.dpop_bound_access_tokens ?? null,
          patch.owner_sign_in ?? null,
          patch.dpop_nonce_required ?? null,
        ],
      );
      return rows[0] as Client | undefined;
    },

    async rotateSecret(id: string) {
      const clientSecret = generateSecret('aa_cs');
      const { rows } = await db.query<Client>(`UPDATE clients SET secret_hash = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [
        id,
        sha256(clientSecret),
      ]);
      return rows[0] ? { ...rows[0], client_secret: clientSecret } : undefined;
    },

    /**
     * A Client ID Metadata Document as just fetched (its URL is the id): recorded, or brought up to
     * date. An operator's deactivation stays. Undefined when the id is taken by another kind of client.
     */
    async keepDocument(id: string, fields: PublicClientFields): Promise<Client | undefined> {
      const { rows } = await db.query<Client>(
        `INSERT INTO clients (id, name, secret_hash, redirect_uris, registration, token_endpoint_auth_method, jwks, jwks_uri)
         VALUES ($1, $2, $3, $4, 'metadata_document', $5, $6, $7)
         ON CONFLICT (id) DO UPDATE SET name = $2, redirect_uris = $4, token_endpoint_auth_method = $5, jwks = $6, jwks_uri = $7, updated_at = now()
           WHERE clients.registration = 'metadata_document'
         RETURNING ${COLUMNS}`,
        [id, fields.name, unknownSecretHash(), fields.redirect_uris, fields.token_endpoint_auth_method, fields.jwks, fields.jwks_uri],
      );
      return rows[0];
    },

    /** A dynamic registration (RFC 7591): a public client with a new id. */
    async register(fields: Pick<PublicClientFields, 'name' | 'redirect_uris'>): Promise<Client> {
      const { rows } = await db.query<Client>(
        `INSERT INTO clients (id, name, secret_hash, redirect_uris, registration, token_endpoint_auth_method)
         VALUES ($1, $2, $3, $4, 'dynamic', 'none') RETURNING ${COLUMNS}`,
        [generateId('client'), fields.name, unknownSecretHash(), fields.redirect_uris],
      );
      return rows[0];
    },

    /** A dynamic registration has started a sign-in: it is no longer purged as unused. */
    async markUsed(id: string): Promise<void> {
      await db.query(`UPDATE clients SET first_used_at = now() WHERE id = $1 AND first_used_at IS NULL`, [id]);
    },

    /** A client's keys for private_key_jwt, if it authenticates so and is active. */
    async assertionKeys(id: string): Promise<ClientKeys | undefined> {
      const { rows } = await db.query<ClientKeys>(
        `SELECT jwks, jwks_uri FROM clients WHERE id = $1 AND active AND token_endpoint_auth_method = 'private_key_jwt'`,
        [id],
      );
      return rows[0];
    },

    /**
     * Spends a client assertion's jti (RFC 7523 §3: single use), kept until `keepUntil`; false when it
     * was spent already, by whichever instance saw it first.
     */
    async spendAssertion(id: string, jti: string, keepUntil: Date): Promise<boolean> {
      const { rows } = await db.query(
        `INSERT INTO client_assertion_jtis (client_id, jti, expires_at) VALUES ($1, $2, $3) ON CONFLICT (client_id, jti) DO NOTHING RETURNING 1`,
        [id, jti, keepUntil],
      );
      return rows.length === 1;
    },

    async remove(id: string): Promise<boolean> {
      const { rowCount } = await db.query(`DELETE FROM clients WHERE id = $1`, [id]);
      return rowCount > 0;
    },
  };
}
