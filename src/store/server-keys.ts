import type { Queryable } from '../db/types.js';

/** A stored ID token signing key pair: the JWKs as the OIDC module made them. */
export interface StoredSigningKey<Alg extends string = string, Jwk = Record<string, unknown>> {
  kid: string;
  alg: Alg;
  private_jwk: Jwk;
}

/** The server's own keys: the generated HS256 secret, the DPoP nonce secret, the generated admin token's digest and the ID token signing key pairs. */
export function createServerKeyStore(db: Queryable) {
  /**
   * The value kept under `kid`, `candidate` if none was kept yet. ON CONFLICT makes two instances
   * starting together settle on the same value.
   */
  async function keep(kid: string, purpose: string, candidate: string): Promise<string> {
    await db.query(`INSERT INTO server_keys (kid, purpose, secret) VALUES ($1, $2, $3) ON CONFLICT (kid) DO NOTHING`, [kid, purpose, candidate]);
    const { rows } = await db.query<{ secret: string }>(`SELECT secret FROM server_keys WHERE kid = $1`, [kid]);
    return rows[0].secret;
  }

  return {
    /** The HS256 secret kept in the store, `candidate` if none was kept yet. */
    jwtSecret: (candidate: string) => keep('jwt-default', 'jwt', candidate),

    /** The private JWK (JSON) that signs the request-signing key directory's responses, `candidate` if none was kept yet. */
    directoryKey: (candidate: string) => keep('http-message-signatures-directory', 'ed25519-private-jwk', candidate),
    /** The secret DPoP nonces are derived from (src/dpop/nonces.ts), `candidate` if none was kept yet. */
    dpopNonceSecret: (candidate: string) => keep('dpop-nonce', 'dpop-nonce', candidate),

    /** The SHA-256 digest of the deployment's generated admin token (never the token), `candidate` if none was kept yet. */
    adminTokenDigest: (candidate: string) => keep('admin-token', 'admin-token-sha256', candidate),

    /**
     * Public halves of the keys still published: the current ones in the order of `algs`, then
     * retired ones whose tokens may live, newest first.
     */
    async publishedSigningKeys<Jwk>(algs: readonly string[]): Promise<Jwk[]> {
      const { rows } = await db.query<{ public_jwk: Jwk }>(
        `SELECT public_jwk FROM signing_keys WHERE expires_at IS NULL OR expires_at > now()
         ORDER BY retired_at IS NOT NULL, array_position($1::text[], alg), created_at DESC, kid DESC`,
        [algs],
      );
      return rows.map((r) => r.public_jwk);
    },

    /** The current key pair of one algorithm. */
    async currentSigningKey<Alg extends string, Jwk>(alg: Alg): Promise<StoredSigningKey<Alg, Jwk> | undefined> {
      const { rows } = await db.query<StoredSigningKey<Alg, Jwk>>(
        `SELECT kid, alg, private_jwk FROM signing_keys WHERE retired_at IS NULL AND alg = $1 ORDER BY created_at DESC, kid DESC LIMIT 1`,
        [alg],
      );
      return rows[0];
    },

    /**
     * Makes a new key pair current for its algorithm and retires the one before, which stays
     * published for `retiredLifetimeSeconds`; one statement, so both commit together.
     */
    async rotateSigningKey(
      key: { kid: string; alg: string; privateJwk: unknown; publicJwk: unknown },
      retiredLifetimeSeconds: number,
    ): Promise<void> {
      await db.query(
        `WITH retired AS (
           UPDATE signing_keys SET retired_at = now(), expires_at = now() + make_interval(secs => $5)
           WHERE retired_at IS NULL AND alg = $2
         )
         INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk) VALUES ($1, $2, $3, $4)`,
        [key.kid, key.alg, JSON.stringify(key.privateJwk), JSON.stringify(key.publicJwk), retiredLifetimeSeconds],
      );
    },
  };
}
