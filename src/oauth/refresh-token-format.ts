import { generateSecret } from '../crypto/secrets.js';

// Refresh tokens are opaque random strings; the prefix tells them apart from access tokens (JWTs).
const PREFIX = 'aa_rt';

export function newRefreshToken(): string {
  return generateSecret(PREFIX);
}

export function isRefreshTokenFormat(token: string): boolean {
  return token.startsWith(`${PREFIX}_`);
}
