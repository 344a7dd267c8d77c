/**
 * "Sign in with agent" with nothing but `fetch` and node:http: the steps any stack repeats with its
 * own HTTP client. Authorization code flow with PKCE (RFC 7636), a `state` bound to the browser's
 * session, the `iss` check of RFC 9207, the code redeemed with client_secret_post, then /userinfo.
 *
 * Run it:  ISSUER=https://auth.example CLIENT_ID=… CLIENT_SECRET=… PORT=8080 npm run example:fetch-website
 * (register http://localhost:8080/callback as the client's redirect URI).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { signInStylesheet, signInWithAgent } from '../shared/site.js';

export interface FetchWebsiteOptions {
  /** agent-auth's issuer URL. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
}

export interface RunningFetchWebsite {
  url: string;
  /** The redirect URI to register for the client: `${url}/callback`. */
  redirectUri: string;
  close(): Promise<void>;
}

type Session =
  | { step: 'signing-in'; state: string; verifier: string }
  // `sub` is the agent id: the key of the website's account for this agent.
  | { step: 'signed-in'; sub: string; email?: string }
  | { step: 'failed'; error: string };

const base64url = (bytes: Buffer) => bytes.toString('base64url');
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const sameString = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

function page(issuer: string, body: string) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Example shop (fetch)</title>
${signInStylesheet(issuer)}
</head><body><h1>Example shop</h1>
${body}
</body></html>`;
}

function home(issuer: string, session: Session | undefined) {
  if (session?.step === 'signed-in') {
    return page(
      issuer,
      `<p id="signed-in">Signed in as <strong id="email">${escapeHtml(session.email ?? session.sub)}</strong></p>
<p>Agent id: <code id="sub">${escapeHtml(session.sub)}</code></p>`,
    );
  }
  const failure = session?.step === 'failed' ? `<p id="error" role="alert">Sign-in failed: ${escapeHtml(session.error)}</p>` : '';
  // The button of docs/websites.md, its markup as examples/shared/site.ts writes it.
  return page(issuer, `${failure}${signInWithAgent('a', 'href="/login"')}`);
}

export async function startFetchWebsite(options: FetchWebsiteOptions): Promise<RunningFetchWebsite> {
  const { issuer, clientId, clientSecret, port = 0, host = '127.0.0.1' } = options;
  // RFC 8414 metadata: the endpoints, and the issuer that `iss` must equal.
  const metadataResponse = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
  if (!metadataResponse.ok) throw new Error(`no metadata at ${issuer}: ${metadataResponse.status}`);
  const metadata = (await metadataResponse.json()) as Record<string, string>;
  if (metadata.issuer !== issuer) throw new Error(`metadata names issuer ${metadata.issuer}, not ${issuer}`);

  // In-memory sessions keep the example short; a real site keeps them in its session store.
  const sessions = new Map<string, Session>();
  let redirectUri = '';

  function sessionId(req: IncomingMessage) {
    return /(?:^|;\s*)session=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1];
  }

  function send(res: ServerResponse, status: number, html: string) {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
  }

  function redirect(res: ServerResponse, location: string, cookie?: string) {
    res.writeHead(303, { location, ...(cookie ? { 'set-cookie': cookie } : {}) }).end();
  }

  function login(res: ServerResponse) {
    const verifier = base64url(randomBytes(32));
    const state = base64url(randomBytes(16));
    const id = base64url(randomBytes(32));
    sessions.set(id, { step: 'signing-in', state, verifier });
    const authorize = new URL(metadata.authorization_endpoint);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: 'openid email',
      state,
      code_challenge: base64url(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
    }).toString();
    redirect(res, authorize.href, `session=${id}; Path=/; HttpOnly; SameSite=Lax`);
  }

  /** The redirect back from agent-auth: checks, then the code for tokens, then who signed in. */
  async function callback(params: URLSearchParams, session: Session | undefined): Promise<Session> {
    if (session?.step !== 'signing-in') return { step: 'failed', error: 'no sign-in in progress' };
    if (!sameString(params.get('state') ?? '', session.state)) return { step: 'failed', error: 'state mismatch' };
    if (params.get('iss') !== issuer) return { step: 'failed', error: 'iss mismatch' };
    const error = params.get('error');
    if (error) return { step: 'failed', error };
    const tokenResponse = await fetch(metadata.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: params.get('code') ?? '',
        redirect_uri: redirectUri,
        code_verifier: session.verifier,
        client_id: clientId,
        client_secret: clientSecret,
      }),
    });
    const tokens = (await tokenResponse.json()) as { access_token?: string; error?: string };
    if (!tokenResponse.ok || !tokens.access_token) return { step: 'failed', error: tokens.error ?? `token ${tokenResponse.status}` };
    const userinfoResponse = await fetch(metadata.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    if (!userinfoResponse.ok) return { step: 'failed', error: `userinfo ${userinfoResponse.status}` };
    const user = (await userinfoResponse.json()) as { sub: string; email?: string };
    return { step: 'signed-in', sub: user.sub, email: user.email };
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://website.invalid');
    const id = sessionId(req);
    if (url.pathname === '/login') return login(res);
    if (url.pathname === '/callback') {
      callback(url.searchParams, id ? sessions.get(id) : undefined)
        .then((outcome) => {
          if (id) sessions.set(id, outcome);
          redirect(res, '/');
        })
        .catch(() => send(res, 502, home(issuer, { step: 'failed', error: 'agent-auth unreachable' })));
      return;
    }
    if (url.pathname === '/') return send(res, 200, home(issuer, id ? sessions.get(id) : undefined));
    send(res, 404, page(issuer, '<p>Not found</p>'));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const { port: bound } = server.address() as { port: number };
  const url = `http://${host}:${bound}`;
  redirectUri = `${url}/callback`;
  return { url, redirectUri, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { ISSUER, CLIENT_ID, CLIENT_SECRET, PORT = '8080' } = process.env;
  if (!ISSUER || !CLIENT_ID || !CLIENT_SECRET) {
    console.error('set ISSUER, CLIENT_ID and CLIENT_SECRET');
    process.exit(1);
  }
  const site = await startFetchWebsite({ issuer: ISSUER, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, port: Number(PORT), host: 'localhost' });
  console.log(`example shop at ${site.url}; register ${site.redirectUri} as the client's redirect URI`);
}
