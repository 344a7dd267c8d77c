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

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,200}$/;

/** Why a value cannot be a scope a resource accepts, or undefined when it can. */
export function scopeTokenProblem(value: string): string | undefined {
  return SCOPE_TOKEN.test(value) ? undefined : `"${value}" is not a scope token (RFC 6749 §3.3: printable ASCII but space, " and \\)`;
}

/** A scope parameter's values, duplicates folded; any syntax problem is invalid_scope. */
export function scopeTokens(scope: string): string[] {
  const values = [...new Set(scope.split(' ').filter(Boolean))];
  const problem = values.map(scopeTokenProblem).find(Boolean);
  if (problem) throw new InvalidScope(problem);
  return values;
}

/**
 * The scope asked for a resource: any of the scopes it accepts (all of them by default), nothing
 * else (docs/protocol.md, "Resources"); duplicates folded.
 */
export function parseResourceScope(scope: string | undefined, accepted: readonly string[]): string[] {
  if (scope === undefined) return [...accepted];
  const values = scopeTokens(scope);
  const refused = values.filter((s) => !accepted.includes(s));
  if (refused.length > 0) throw new InvalidScope(`this resource does not accept the scope: ${refused.join(' ')}`);
  return values;
}
