/**
 * A relying website that offers "Sign in with agent": an ordinary OAuth 2.0 client (openid-client)
 * of agent-auth using the authorization code flow with PKCE, state and client_secret_post. After
 * the sign-in it calls /userinfo and shows the email it received.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:website       (ISSUER, default http://localhost:3000; PORT, default 8080)
 *
 * Register http://localhost:8080/callback as the client's redirect URI (the README's quick start does).
 *
 * With OIDC=true (agent-auth in OpenID Connect mode) it signs in with OpenID Connect and keeps the
 * ID token's `sid` with its session; register http://localhost:8080/backchannel-logout as the
 * website's backchannel_logout_uri, and the session ends when agent-auth says the grant ended
 * (a revocation by the agent's owner or an operator): back-channel logout.
 *
 * GET /signed says which agent signed the request (Web Bot Auth), checked against agent-auth's key
 * directory: "Signed by agent X (owner verified)".
 */
import { randomBytes } from 'node:crypto';
import { webBotAuthFastify, webBotAuthOf, type WebBotAuthResult } from '@agent-auth/website/web-bot-auth';
import fastifyCookie from '@fastify/cookie';
import Fastify from 'fastify';
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import * as oauth from 'openid-client';
import { escapeHtml, isMain, signInStylesheet, signInWithAgent } from '../shared/site.js';

export interface WebsiteOptions {
  /** agent-auth's issuer URL; its metadata is read from /.well-known/oauth-authorization-server. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** 0 (default) picks a free port; the registered redirect URI must then be updated to match. */
  port?: number;
  host?: string;
  /** OpenID Connect: an ID token with each sign-in, and back-channel logout at /backchannel-logout. */
  oidc?: boolean;
}

export interface RunningWebsite {
  url: string;
  /** The redirect URI to register for this client: `${url}/callback`. */
  redirectUri: string;
  close(): Promise<void>;
}

type Session =
  | { step: 'signing-in'; state: string; codeVerifier: string }
  | { step: 'signed-in'; sub: string; email?: string; sid?: string }
  | { step: 'failed'; error: string };

const SESSION_COOKIE = 'shop_session';

function page(issuer: string, body: string) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Example shop</title>
${signInStylesheet(issuer)}
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}</style>
</head><body><h1>Example shop</h1>
${body}
</body></html>`;
}

function home(issuer: string, session: Session | undefined) {
  if (session?.step === 'signed-in') {
    const who = session.email ?? `agent ${session.sub}`;
    return page(
      issuer,
      `<p id="signed-in">Signed in as <strong id="email">${escapeHtml(who)}</strong></p>
<p>Agent id: <code id="sub">${escapeHtml(session.sub)}</code></p>`,
    );
  }
  const failure = session?.step === 'failed' ? `<p id="error" role="alert">Sign-in failed: ${escapeHtml(session.error)}</p>` : '';
  // The markup docs/websites.md recommends: a link to the route that starts the sign-in.
  return page(issuer, `${failure}${signInWithAgent('a', 'id="sign-in" href="/login"')}`);
}

/** Who signed the request, as the website kit found it. */
function signedPage(issuer: string, result: WebBotAuthResult | undefined) {
  if (!result?.ok) return page(issuer, `<p id="unsigned">Not signed by an agent (${escapeHtml(result?.reason ?? 'missing_signature')}).</p>`);
  const { agent } = result;
  const owner = agent.owner_email_verified ? 'owner verified' : 'owner not verified';
  return page(
    issuer,
    `<p id="signed-by">Signed by agent <strong>${escapeHtml(agent.name ?? agent.agent_id)}</strong> (${owner})</p>
<p>Agent id: <code id="agent-id">${escapeHtml(agent.agent_id)}</code></p>`,
  );
}

const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/**
 * The checks of OpenID Connect Back-Channel Logout 1.0 §2.6: signed by the issuer's key (its JWKS),
 * typed logout+jwt, for this client, recent, with the logout event and a sid, and no nonce.
 */
async function verifyLogoutToken(token: string, issuer: string, clientId: string, jwks: ReturnType<typeof createRemoteJWKSet>): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, jwks, {
    issuer,
    audience: clientId,
    typ: 'logout+jwt',
    algorithms: ['RS256', 'ES256', 'EdDSA'],
    requiredClaims: ['iat', 'exp', 'jti', 'sid'],
  });
  const events = payload.events as Record<string, unknown> | undefined;
  if (typeof events?.[BACKCHANNEL_LOGOUT_EVENT] !== 'object') throw new Error('not a back-channel logout event');
  if ('nonce' in payload) throw new Error('a logout token carries no nonce');
  return payload;
}

export async function startWebsite(options: WebsiteOptions): Promise<RunningWebsite> {
  const { issuer, clientId, clientSecret, port = 0, host = '127.0.0.1', oidc = false } = options;
  const config = await oauth.discovery(new URL(issuer), clientId, undefined, oauth.ClientSecretPost(clientSecret), {
    // OpenID Connect discovery, or else RFC 8414 metadata.
    algorithm: oidc ? 'oidc' : 'oauth2',
    execute: new URL(issuer).protocol === 'http:' ? [oauth.allowInsecureRequests] : [],
  });
  const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));

  // In-memory sessions keep the example short; a real site keeps them in its session store.
  const sessions = new Map<string, Session>();
  const app = Fastify();
  await app.register(fastifyCookie);
  let redirectUri = '';

  function sessionOf(cookies: Record<string, string | undefined>) {
    const id = cookies[SESSION_COOKIE];
    return id ? sessions.get(id) : undefined;
  }

  app.get('/', async (request, reply) => reply.type('text/html').send(home(issuer, sessionOf(request.cookies))));

  // Signed agent requests: any page may ask who signed it; this one shows the answer.
  app.get('/signed', { preHandler: webBotAuthFastify({ trustedIssuers: [issuer] }) }, async (request, reply) =>
    reply.type('text/html').send(signedPage(issuer, webBotAuthOf(request))),
  );

  app.get('/login', async (_request, reply) => {
    const codeVerifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const id = randomBytes(32).toString('base64url');
    sessions.set(id, { step: 'signing-in', state, codeVerifier });
    const authorizationUrl = oauth.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: oidc ? 'openid email' : 'email',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    reply.setCookie(SESSION_COOKIE, id, { path: '/', httpOnly: true, sameSite: 'lax' });
    return reply.redirect(authorizationUrl.href, 303);
  });

  app.get('/callback', async (request, reply) => {
    const id = request.cookies[SESSION_COOKIE];
    const session = id ? sessions.get(id) : undefined;
    if (!id || session?.step !== 'signing-in') return reply.code(400).type('text/html').send(home(issuer, undefined));
    try {
      // Checks state and iss, then redeems the code with the PKCE verifier and the client secret.
      const tokens = await oauth.authorizationCodeGrant(config, new URL(request.url, redirectUri), {
        pkceCodeVerifier: session.codeVerifier,
        expectedState: session.state,
      });
      // In OpenID Connect mode the (verified) ID token names the subject and the session (sid);
      // in plain OAuth there is none, and userinfo's `sub` is the agent id.
      const claims = tokens.claims();
      const user = await oauth.fetchUserInfo(config, tokens.access_token, claims?.sub ?? oauth.skipSubjectCheck);
      sessions.set(id, { step: 'signed-in', sub: user.sub, email: user.email, sid: claims?.sid as string | undefined });
    } catch (err) {
      const error = err instanceof oauth.AuthorizationResponseError ? err.error : err instanceof Error ? err.message : 'unknown';
      sessions.set(id, { step: 'failed', error });
    }
    return reply.redirect('/', 303);
  });

  // Back-channel logout: agent-auth POSTs a logout token (a form) when the grant behind a session ended.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
  app.post('/backchannel-logout', async (request, reply) => {
    const token = (request.body as Record<string, string | undefined> | undefined)?.logout_token;
    try {
      const { sid } = await verifyLogoutToken(token ?? '', issuer, clientId, jwks);
      // Ending a session twice is harmless, so a retried token (the same jti) needs no bookkeeping.
      for (const [id, session] of sessions) if (session.step === 'signed-in' && session.sid === sid) sessions.delete(id);
      return reply.header('cache-control', 'no-store').code(200).send();
    } catch {
      return reply.header('cache-control', 'no-store').code(400).send({ error: 'invalid_request' });
    }
  });

  await app.listen({ port, host });
  // The host as given (`localhost` stays `localhost`, as the registered redirect URI has it).
  const url = `http://${host}:${(app.server.address() as { port: number }).port}`;
  redirectUri = `${url}/callback`;
  return { url, redirectUri, close: () => app.close() };
}

if (isMain(import.meta.url)) {
  const { ISSUER = 'http://localhost:3000', CLIENT_ID, CLIENT_SECRET, PORT = '8080', OIDC } = process.env;
  if (!CLIENT_ID || !CLIENT_SECRET) {
    console.error("set CLIENT_ID and CLIENT_SECRET (the README's quick start registers the website with agent-auth first)");
    process.exit(1);
  }
  const oidc = OIDC === 'true';
  const site = await startWebsite({ issuer: ISSUER, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, port: Number(PORT), host: 'localhost', oidc });
  console.log(`Example shop on ${site.url} (redirect URI ${site.redirectUri}), signing in with agent-auth at ${ISSUER}`);
  if (oidc) console.log(`Back-channel logout URI: ${site.url}/backchannel-logout`);
}
