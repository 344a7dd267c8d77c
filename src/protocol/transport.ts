const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Why `url` may not carry codes and tokens, or undefined when it may: https, or plain http on this
 * machine only (OAuth 2.1 §1.5, RFC 9700 §2.6). For redirect URIs and the issuer alike.
 */
export function transportProblem(url: URL): string | undefined {
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return 'must use https (plain http only on localhost, 127.0.0.1 or [::1])';
}
