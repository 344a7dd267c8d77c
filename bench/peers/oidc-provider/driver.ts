import { type Answer, CookieJar, expectStatus, FORM, form, pkce, send } from '../../lib/http.js';
import { PEER_CLIENT } from './provider.js';

export interface PeerTokens {
  access_token: string;
  refresh_token: string;
}

/** Follows the provider's redirects by hand, keeping its cookies, until one leaves the provider. */
async function follow(base: string, jar: CookieJar, res: Answer): Promise<URL> {
  for (let hops = 0; hops < 10; hops++) {
    jar.store(res);
    if (res.status < 300 || res.status >= 400) throw new Error(`peer: expected a redirect, got ${res.status}`);
    const location = new URL(res.headers.get('location')!, base);
    if (location.origin !== new URL(base).origin || location.pathname.startsWith('/interaction/')) return location;
    res = await send(location, { headers: { cookie: jar.header() } });
  }
  throw new Error('peer: too many redirects');
}

/** Submits one devInteractions form (login or consent) and follows on to the next stop. */
async function submit(base: string, jar: CookieJar, interaction: URL, fields: Record<string, string>) {
  const res = await send(interaction, { method: 'POST', headers: { ...FORM, cookie: jar.header() }, body: form(fields) });
  return follow(base, jar, res);
}

/**
 * One sign-in at node-oidc-provider through its development interactions: authorize, log in,
 * consent (prompt=consent with offline_access, so that a refresh token is issued), exchange.
 */
export async function peerSignIn(base: string, account: string): Promise<PeerTokens> {
  const jar = new CookieJar();
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    client_id: PEER_CLIENT.client_id,
    redirect_uri: PEER_CLIENT.redirect_uri,
    response_type: 'code',
    scope: 'openid email offline_access',
    prompt: 'consent',
    state: 'bench-state',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const login = await follow(base, jar, await send(`${base}/auth?${query}`));
  const consent = await submit(base, jar, login, { prompt: 'login', login: account, password: 'any' });
  const callback = await submit(base, jar, consent, { prompt: 'consent' });
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`peer: no code in ${callback}`);

  const res = await send(`${base}/token`, {
    method: 'POST',
    headers: FORM,
    body: form({
      grant_type: 'authorization_code',
      code,
      redirect_uri: PEER_CLIENT.redirect_uri,
      code_verifier: verifier,
      client_id: PEER_CLIENT.client_id,
      client_secret: PEER_CLIENT.client_secret,
    }),
  });
  const tokens = (await (await expectStatus(res, 200)).json()) as PeerTokens;
  if (!tokens.refresh_token) throw new Error('peer: no refresh token issued');
  return tokens;
}

export function peerRefreshBody(refreshToken: string) {
  return form({
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: PEER_CLIENT.client_id,
    client_secret: PEER_CLIENT.client_secret,
  });
}

export function peerIntrospectBody(token: string) {
  return form({ token, client_id: PEER_CLIENT.client_id, client_secret: PEER_CLIENT.client_secret });
}
