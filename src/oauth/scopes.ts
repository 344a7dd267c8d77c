import { InvalidScope } from '../errors.js';

export const SUPPORTED_SCOPES = ['openid', 'email', 'profile'] as const;
export const DEFAULT_SCOPE = 'openid email profile';

/** Parses a space-separated scope string; unknown values are refused, duplicates folded. */
export function parseScope(scope: string | undefined): string[] {
  if (scope === undefined) return DEFAULT_SCOPE.split(' ');
  const values = [...new Set(scope.split(' ').filter(Boolean))];
  const unknown = values.filter((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new InvalidScope(`unknown scope: ${unknown.join(' ')}`);
  return values;
}

/** docs/protocol.md (userinfo): the email is shared for `email`, `openid` or `profile`. */
export const EMAIL_SCOPES: readonly string[] = ['email', 'openid', 'profile'];

export function scopeGrantsEmail(scope: string): boolean {
  return scope.split(' ').some((s) => EMAIL_SCOPES.includes(s));
}

/** What a website receives under `scope`, as an owner reads it (the agent's id it always gets). */
export function sharedInWords(scope: string): string {
  return scopeGrantsEmail(scope) ? 'Your email address' : 'Only the agent’s id';
}
