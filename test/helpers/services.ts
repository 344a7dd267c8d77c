import { loadConfig } from '../../src/config.js';
import { openServices, type Services } from '../../src/services.js';
import { createTestDatabase } from './database.js';

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
