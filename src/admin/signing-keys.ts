import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Conflict } from '../errors.js';
import { DEFAULT_SIGNING_ALG, SIGNING_ALGS } from '../protocol/signing.js';

const keysView = z.object({
  alg: z.string().describe('RS256: what a website that registered no algorithm gets (OpenID Connect Registration §2)'),
  current_kid: z.string().describe('the current key of that algorithm'),
  current: z.array(z.object({ alg: z.string(), kid: z.string() })).describe('the current key of each algorithm, RS256 first'),
  keys: z.array(z.object({ kid: z.string(), alg: z.string(), kty: z.string() })).describe('the published keys, newest first'),
});

/**
 * GET /admin/keys and POST /admin/keys/rotate: the ID token signing keys (OpenID Connect mode).
 * A rotation makes a new key current at once for every algorithm; the old one stays in the JWKS until every token it
 * signed has expired (docs/operations.md).
 */
export default async function adminKeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { signingKeys } = app.services;

  function keys() {
    if (!signingKeys) {
      throw new Conflict('oidc_disabled', 'signing keys exist only in OpenID Connect mode: set ID_TOKEN_SIGNING_ALG');
    }
    return signingKeys;
  }
  const view = async () => {
    const signing = keys();
    const [published, ...current] = await Promise.all([signing.published(), ...SIGNING_ALGS.map((alg) => signing.current(alg))]);
    return {
      alg: DEFAULT_SIGNING_ALG,
      current_kid: current.find((key) => key.alg === DEFAULT_SIGNING_ALG)!.kid,
      current: current.map(({ alg, kid }) => ({ alg, kid })),
      keys: published.map(({ kid, alg, kty }) => ({ kid, alg, kty: kty! })),
    };
  };

  app.get('/keys', { schema: { response: { 200: keysView } } }, view);
  app.post('/keys/rotate', { schema: { response: { 200: keysView } } }, async (request) => {
    const created = await keys().rotate();
    request.log.info({ kids: created.map((key) => key.kid) }, 'ID token signing keys rotated');
    return view();
  });
}
