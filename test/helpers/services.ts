import { loadConfig } from '../../src/config.js';
import { openServices, type Services } from '../../src/services.js';
import { createTestDatabase } from './database.js';
import { pkce } from './flow.js';

/**
 * The services of a process over a fresh test database, without any listener: for the tests that
 * call flows directly (no app, no HTTP). `close` stops them and drops the database.
 */
export async function openTestServices(env: Record<string, string> = {}): Promise<{ services: Services; close: () => Promise<void> }> {
  const database = await createTestDatabase();
  const config = loadConfig({ DATA_DIR: 'memory', ADMIN_TOKEN: 'test-admin-token-0123456789abcdef', ISSUER: 'https://auth.example', ...env });
  const services = await openServices(config, await database.open());
  return {
    services,
    close: async () => {
      await services.db.close();
      await database.drop();
    },
  };
}

/** What /authorize records for a sign-in at `client` (src/agent-sign-in/sign-in.ts, start), for the flows called directly. */
export function newSignIn(
  client: { client_id: string; redirect_uris: string[] },
  fields: { state?: string; scope?: string; login_hint?: string } = {},
) {
  return {
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0],
    state: fields.state ?? 'st4te',
    code_challenge: pkce().challenge,
    scope: fields.scope ?? 'openid email',
    login_hint: fields.login_hint ?? null,
    nonce: null,
  };
}
