import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSecret, safeEqual, sha256 } from '../crypto/secrets.js';

/** Whether a presented value is the admin token: the admin API's bearer token and the console's sign-in. */
export function adminTokenMatcher(adminToken: string): (presented: string) => boolean {
  const expected = sha256(adminToken);
  // Hashing both sides makes the comparison constant-time whatever the lengths.
  return (presented) => safeEqual(sha256(presented), expected);
}

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, 'admin-token');
}

/**
 * ADMIN_TOKEN when set; otherwise the token kept in `$DATA_DIR/admin-token`, created (mode 0600)
 * on first start so that the CLI on the same machine can pick it up. (With DATA_DIR=memory the
 * configuration requires ADMIN_TOKEN.)
 */
export function resolveAdminToken(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = adminTokenPath(dataDir);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const token = generateSecret('aa_admin');
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return token;
}
