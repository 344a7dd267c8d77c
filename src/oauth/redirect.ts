/** The redirect to the website, with RFC 9207 `iss`; any query the registered URI has is kept. */
export function redirectToClient(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
}

/** The website a sign-in is for, as the agent is told it: scheme://host[:port] of its redirect URI. */
export function redirectOrigin(redirectUri: string): string {
  return new URL(redirectUri).origin;
}

const parsed = (value: string) => {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
};

/** The address of a loopback redirect URI (RFC 8252 §7.3) without its port; undefined for any other URI. */
function loopbackWithoutPort(value: string): string | undefined {
  const url = parsed(value);
  // Only a URI already in its normal form: "/a/../cb" must not come to match "/cb".
  if (!url || url.href !== value || url.protocol !== 'http:' || !['127.0.0.1', '[::1]'].includes(url.hostname)) return undefined;
  url.port = '';
  return url.href;
}

/**
 * Whether `presented` is a redirect URI of the client: exactly one of `registered`, or, for a native
 * client (`anyLoopbackPort`), a loopback URI (`http://127.0.0.1` or `http://[::1]`) that differs from
 * one of them in the port alone (RFC 8252 §7.3: the port is picked when the app starts).
 */
export function isRegisteredRedirect(registered: readonly string[], presented: string, anyLoopbackPort: boolean): boolean {
  if (registered.includes(presented)) return true;
  const loopback = anyLoopbackPort ? loopbackWithoutPort(presented) : undefined;
  return loopback !== undefined && registered.some((uri) => loopbackWithoutPort(uri) === loopback);
}
