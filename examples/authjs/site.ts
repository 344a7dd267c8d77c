/**
 * A website that signs users in with agent-auth through Auth.js (@auth/core, the library under
 * NextAuth.js, SvelteKit Auth and Express Auth), on plain node:http so the wiring stays visible.
 * With the server in OpenID Connect mode (ID_TOKEN_SIGNING_ALG set) the provider is `type: "oidc"`
 * and the user comes from the ID token; otherwise it is `type: "oauth"` and the user comes from
 * /userinfo. Either way everything else is read from discovery (docs/interop.md).
 *
 *   ISSUER=http://localhost:3000 CLIENT_ID=… CLIENT_SECRET=… AUTH_SECRET=… OIDC=true PORT=4000 npm run example:authjs
 *
 * Register http://localhost:4000/auth/callback/agent-auth as the client's redirect URI.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Auth, type AuthConfig } from '@auth/core';
import type { OAuthConfig } from '@auth/core/providers';
import { escapeHtml, homePage, isMain, listen, signInWithAgent, type SiteOptions, siteOptionsFromEnv } from '../shared/site.js';

export interface AuthjsSiteOptions extends SiteOptions {
  /** Auth.js events (e.g. signIn, which sees the tokens), for a site that records sign-ins. */
  events?: AuthConfig['events'];
}

export interface RunningSite {
  url: string;
  /** The redirect URI to register for the client. */
  redirectUri: string;
  close(): Promise<void>;
}

interface AgentProfile {
  sub: string;
  email?: string;
}

/** The one provider: what Auth.js needs beyond the issuer and the client's credentials. */
export function agentAuthProvider(options: Pick<SiteOptions, 'issuer' | 'clientId' | 'clientSecret' | 'oidc'>): OAuthConfig<AgentProfile> {
  const { issuer, clientId, clientSecret } = options;
  const common = { id: 'agent-auth', name: 'Agent', issuer, clientId, clientSecret };
  return options.oidc
    ? { ...common, type: 'oidc', checks: ['pkce', 'state', 'nonce'] }
    : // For type "oauth" Auth.js reads the endpoints from discovery only when userinfo is named (here, empty).
      { ...common, type: 'oauth', checks: ['pkce', 'state'], userinfo: {} };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** Writes a fetch Response to node's response, every Set-Cookie included. */
async function send(res: ServerResponse, response: Response) {
  const headers = Object.fromEntries([...response.headers].filter(([name]) => name !== 'set-cookie'));
  res.writeHead(response.status, { ...headers, 'set-cookie': response.headers.getSetCookie() });
  res.end(Buffer.from(await response.arrayBuffer()));
}

export async function startAuthjsSite(options: AuthjsSiteOptions): Promise<RunningSite> {
  const { port, host = '127.0.0.1' } = options;
  const url = `http://${host}:${port}`;
  const config: AuthConfig = {
    basePath: '/auth',
    secret: options.secret,
    trustHost: true,
    providers: [agentAuthProvider(options)],
    events: options.events,
  };
  const auth = (path: string, init: RequestInit = {}) => Auth(new Request(`${url}${path}`, init), config);

  const server = createServer(async (req, res) => {
    try {
      const path = req.url ?? '/';
      const pathname = new URL(path, url).pathname;
      const cookie = req.headers.cookie ?? '';
      if (pathname.startsWith('/auth/')) {
        const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req);
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        return await send(res, await auth(path, { method: req.method, headers, body }));
      }
      if (pathname !== '/') return void res.writeHead(404).end();
      const session = await (await auth('/auth/session', { headers: { cookie } })).json();
      // Auth.js signs in on a POST carrying its CSRF token (double-submit: the token's cookie goes along).
      const csrf = await auth('/auth/csrf', { headers: { cookie } });
      const { csrfToken } = await csrf.json();
      const form = `<form method="post" action="/auth/signin/agent-auth">
<input type="hidden" name="csrfToken" value="${escapeHtml(csrfToken)}"><input type="hidden" name="callbackUrl" value="${url}/">
${signInWithAgent('button', 'id="sign-in"')}</form>`;
      res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': csrf.headers.getSetCookie() });
      res.end(homePage('Auth.js example', options.issuer, session?.user?.email ?? undefined, form));
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`error: ${(err as Error).message}`);
    }
  });
  return { url, redirectUri: `${url}/auth/callback/agent-auth`, close: await listen(server, port, host) };
}

if (isMain(import.meta.url)) {
  const site = await startAuthjsSite(siteOptionsFromEnv('AUTH_SECRET', 4000));
  console.log(`Auth.js example on ${site.url}; redirect URI ${site.redirectUri}`);
}
