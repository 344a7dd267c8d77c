import { generateId, generateSecret, sha256 } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';
import type { SigningAlg } from '../protocol/signing.js';

export interface Client {
  client_id: string;
  name: string;
  redirect_uris: string[];
  /** The algorithm of its ID tokens and logout tokens; null: ID_TOKEN_SIGNING_ALG. */
  id_token_signed_response_alg: SigningAlg | null;
  /** Where it hears that a grant ended (OpenID Connect Back-Channel Logout 1.0); null: nowhere. */
  backchannel_logout_uri: string | null;
  /** It must use DPoP (RFC 9449 §5.2): its token requests without a proof are refused. */
  dpop_bound_access_tokens: boolean;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** What client authentication reads; never leaves the server. */
export interface StoredClientCredentials {
  client_id: string;
  secret_hash: string;
  active: boolean;
}

export interface ClientWithSecretHash extends Client, StoredClientCredentials {}

const COLUMNS =
  'id AS client_id, name, redirect_uris, id_token_signed_response_alg, backchannel_logout_uri, dpop_bound_access_tokens, active, created_at, updated_at';

/** What a registration sets; in a patch, null clears an optional field. */
export interface ClientFields {
  name: string;
  redirect_uris: string[];
  id_token_signed_response_alg?: SigningAlg | null;
  backchannel_logout_uri?: string | null;
  dpop_bound_access_tokens?: boolean;
}

export function createClientStore(db: Db) {
  return {
    async create(input: ClientFields) {
      const clientSecret = generateSecret('aa_cs');
      const { rows } = await db.query<Client>(
        `INSERT INTO clients (id, name, secret_hash, redirect_uris, id_token_signed_response_alg, backchannel_logout_uri, dpop_bound_access_tokens)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
        [
          generateId('client'),
          input.name,
          sha256(clientSecret),
          input.redirect_uris,
          input.id_token_signed_response_alg ?? null,
          input.backchannel_logout_uri ?? null,
          input.dpop_bound_access_tokens ?? false,
        ],
      );
      return { ...rows[0], client_secret: clientSecret };
    },

    async get(id: string): Promise<Client | undefined> {
      const { rows } = await db.query<Client>(`SELECT ${COLUMNS} FROM clients WHERE id = $1`, [id]);
      return rows[0];
    },

    /** For client authentication: includes the secret hash, never leaves the server. */
    async getWithSecret(id: string): Promise<ClientWithSecretHash | undefined> {
      const { rows } = await db.query<ClientWithSecretHash>(`SELECT ${COLUMNS}, secret_hash FROM clients WHERE id = $1`, [id]);
      return rows[0];
    },

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
           dpop_bound_access_tokens = coalesce($9, dpop_bound_access_tokens), updated_at = now()
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

    async remove(id: string): Promise<boolean> {
      const { rowCount } = await db.query(`DELETE FROM clients WHERE id = $1`, [id]);
      return rowCount > 0;
    },
  };
}
