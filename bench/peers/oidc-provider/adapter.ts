import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Queryable } from '../../../src/db/types.js';

/**
 * node-oidc-provider keeps every model (sessions, interactions, grants, codes, tokens) through
 * one adapter interface. This one stores them all in a single key/value table with a jsonb
 * payload, indexed on the lookups the provider makes besides the id.
 */
export const PEER_SCHEMA = `
CREATE TABLE IF NOT EXISTS oidc_models (
  model        text NOT NULL,
  id           text NOT NULL,
  payload      jsonb NOT NULL,
  grant_id     text,
  user_code    text,
  uid          text,
  expires_at   timestamptz,
  consumed_at  timestamptz,
  PRIMARY KEY (model, id)
);
CREATE INDEX IF NOT EXISTS oidc_models_grant_id_idx ON oidc_models (grant_id);
CREATE INDEX IF NOT EXISTS oidc_models_user_code_idx ON oidc_models (user_code);
CREATE INDEX IF NOT EXISTS oidc_models_uid_idx ON oidc_models (uid);
CREATE INDEX IF NOT EXISTS oidc_models_expires_at_idx ON oidc_models (expires_at);
`;

type Row = { payload: AdapterPayload; consumed: number | null };

const LIVE = `(expires_at IS NULL OR expires_at > now())`;
const SELECT = `SELECT payload, extract(epoch FROM consumed_at)::int AS consumed FROM oidc_models`;

export function postgresAdapter(db: Queryable) {
  const found = (rows: Row[]): AdapterPayload | undefined =>
    rows[0] && (rows[0].consumed === null ? rows[0].payload : { ...rows[0].payload, consumed: rows[0].consumed });

  return class PostgresAdapter implements Adapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number) {
      await db.query(
        `INSERT INTO oidc_models (model, id, payload, grant_id, user_code, uid, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::int IS NULL THEN NULL ELSE now() + make_interval(secs => $7::int) END)
         ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
           user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at`,
        [this.model, id, payload, payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, expiresIn ?? null],
      );
    }

    async find(id: string) {
      const { rows } = await db.query<Row>(`${SELECT} WHERE model = $1 AND id = $2 AND ${LIVE}`, [this.model, id]);
      return found(rows);
    }

    async findByUid(uid: string) {
      const { rows } = await db.query<Row>(`${SELECT} WHERE model = $1 AND uid = $2 AND ${LIVE}`, [this.model, uid]);
      return found(rows);
    }

    async findByUserCode(userCode: string) {
      const { rows } = await db.query<Row>(`${SELECT} WHERE model = $1 AND user_code = $2 AND ${LIVE}`, [this.model, userCode]);
      return found(rows);
    }

    async consume(id: string) {
      await db.query(`UPDATE oidc_models SET consumed_at = now() WHERE model = $1 AND id = $2`, [this.model, id]);
    }

    async destroy(id: string) {
      await db.query(`DELETE FROM oidc_models WHERE model = $1 AND id = $2`, [this.model, id]);
    }

    async revokeByGrantId(grantId: string) {
      await db.query(`DELETE FROM oidc_models WHERE grant_id = $1`, [grantId]);
    }
  };
}
