import type { Db } from '../db/types.js';
import type { SigningAlg } from '../protocol/signing.js';

/** A protected resource (an MCP server, an API) that takes our JWT access tokens (docs/protocol.md, "Resources"). */
export interface Resource {
  /** The canonical resource identifier (src/oauth/resource-indicator.ts): the tokens' `aud`. */
  resource: string;
  name: string;
  /** The scopes that may be asked for it. */
  scopes: string[];
  /** The website it belongs to, whose credentials may introspect its tokens; null: none. */
  client_id: string | null;
  signing_alg: SigningAlg;
  created_at: Date;
  updated_at: Date;
}

export interface ResourceFields {
  resource: string;
  name: string;
  scopes: string[];
  client_id?: string | null;
  signing_alg?: SigningAlg;
}

const COLUMNS = 'resource, name, scopes, client_id, signing_alg, created_at, updated_at';

/** The resources; the identifiers given here are canonical already. */
export function createResourceStore(db: Db) {
  return {
    /** Undefined when the identifier is taken. */
    async create(input: ResourceFields): Promise<Resource | undefined> {
      const { rows } = await db.query<Resource>(
        `INSERT INTO resources (resource, name, scopes, client_id, signing_alg) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (resource) DO NOTHING RETURNING ${COLUMNS}`,
        [input.resource, input.name, input.scopes, input.client_id ?? null, input.signing_alg ?? 'RS256'],
      );
      return rows[0];
    },

    async get(resource: string): Promise<Resource | undefined> {
      const { rows } = await db.query<Resource>(`SELECT ${COLUMNS} FROM resources WHERE resource = $1`, [resource]);
      return rows[0];
    },

    async list(): Promise<Resource[]> {
      const { rows } = await db.query<Resource>(`SELECT ${COLUMNS} FROM resources ORDER BY created_at, resource`);
      return rows;
    },

    /** Whether any resource is registered: the JWKS publishes the token keys only then. */
    async any(): Promise<boolean> {
      const { rows } = await db.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM resources) AS any`);
      return rows[0].any;
    },

    /** In a patch, a null client_id detaches the resource from its website. */
    async update(resource: string, patch: Partial<Omit<ResourceFields, 'resource'>>): Promise<Resource | undefined> {
      const { rows } = await db.query<Resource>(
        `UPDATE resources SET name = coalesce($2, name), scopes = coalesce($3, scopes), signing_alg = coalesce($4, signing_alg),
           client_id = CASE WHEN $5 THEN $6 ELSE client_id END, updated_at = now()
         WHERE resource = $1 RETURNING ${COLUMNS}`,
        [resource, patch.name ?? null, patch.scopes ?? null, patch.signing_alg ?? null, patch.client_id !== undefined, patch.client_id ?? null],
      );
      return rows[0];
    },

    async remove(resource: string): Promise<boolean> {
      const { rowCount } = await db.query(`DELETE FROM resources WHERE resource = $1`, [resource]);
      return rowCount > 0;
    },
  };
}
