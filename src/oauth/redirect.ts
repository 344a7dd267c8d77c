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
