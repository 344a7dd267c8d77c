/**
 * A website that signs users in with agent-auth through Better Auth's genericOAuth plugin, on plain
 * node:http. Better Auth reads everything from discovery: in OpenID Connect mode
 * (ID_TOKEN_SIGNING_ALG set on the server) it verifies the ID token against the JWKS and takes
 * the user from it. In the default mode it takes the user from /userinfo and needs to be told that
 * the account's id is `sub` (docs/interop.md). Users and sessions live in Better Auth's memory
 * adapter here; a real site gives it its database.
 *
 *   ISSUER=http://localhost:3000 CLIENT_ID=… CLIENT_SECRET=… BETTER_AUTH_SECRET=… OIDC=true PORT=4001 npm run example:better-auth
 *
 * Register http://localhost:4001/api/auth/callback/agent-auth as the client's redirect URI.
 */
import { createServer } from 'node:http';
import { betterAuth } from 'better-auth';
import { memoryAdapter } from 'better-auth/adapters/memory';
import { toNodeHandler } from 'better-auth/node';
import { genericOAuth } from 'better-auth/plugins/generic-oauth';
import { homePage, isMain, listen, signInWithAgent, type SiteOptions, siteOptionsFromEnv } from '../shared/site.js';

export interface RunningSite {
  url: string;
  /** The redirect URI to register for the client. */
  redirectUri: string;
  /** The users and accounts Better Auth created (its memory adapter's tables). */
  users(): { email: string; emailVerified: boolean }[];
  accounts(): { accountId: string; providerId: string; idToken?: string }[];
  close(): Promise<void>;
}

const PROVIDER_ID = 'agent-auth';

export function createBetterAuth(options: SiteOptions & { url: string; database: Record<string, unknown[]> }) {
  return betterAuth({
    baseURL: options.url,
    secret: options.secret,
    database: memoryAdapter(options.database as Record<string, never[]>),
    plugins: [
      genericOAuth({
        config: [
          {
            providerId: PROVIDER_ID,
            discoveryUrl: `${options.issuer}/.well-known/openid-configuration`,
            clientId: options.clientId,
            clientSecret: options.clientSecret,
            scopes: ['openid', 'email'],
            pkce: true,
            // Without an ID token Better Auth takes the account id from userinfo's `id`; ours is `sub`.
            ...(options.oidc ? {} : { accountSubject: ({ profile }) => String(profile.sub ?? '') }),
          },
        ],
      }),
    ],
  });
}

export async function startBetterAuthSite(options: SiteOptions): Promise<RunningSite> {
  const { port, host = '127.0.0.1' } = options;
  const url = `http://${host}:${port}`;
  const database: Record<string, unknown[]> = { user: [], session: [], account: [], verification: [] };
  const auth = createBetterAuth({ ...options, url, database });
  const authHandler = toNodeHandler(auth);

  const server = createServer(async (req, res) => {
    try {
      if (req.url?.startsWith('/api/auth/')) return await authHandler(req, res);
      const headers = new Headers({ cookie: req.headers.cookie ?? '' });
      // By path: a query string (even an empty one, `/login?`) does not change the route.
      const path = new URL(req.url ?? '/', url).pathname;
      if (path === '/login') {
        // The sign-in starts on the server: Better Auth answers with the authorization URL and its state cookie.
        const started = await auth.api.signInSocial({ body: { provider: PROVIDER_ID, callbackURL: `${url}/` }, headers, asResponse: true });
        const { url: authorizationUrl } = await started.json();
        res.writeHead(302, { location: authorizationUrl, 'set-cookie': started.headers.getSetCookie() });
        return void res.end();
      }
      if (path !== '/') return void res.writeHead(404).end();
      const session = await auth.api.getSession({ headers });
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(homePage('Better Auth example', options.issuer, session?.user.email, signInWithAgent('a', 'id="sign-in" href="/login"')));
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`error: ${(err as Error).message}`);
    }
  });
  return {
    url,
    redirectUri: `${url}/api/auth/callback/${PROVIDER_ID}`,
    users: () => database.user as ReturnType<RunningSite['users']>,
    accounts: () => database.account as ReturnType<RunningSite['accounts']>,
    close: await listen(server, port, host),
  };
}

if (isMain(import.meta.url)) {
  const site = await startBetterAuthSite(siteOptionsFromEnv('BETTER_AUTH_SECRET', 4001));
  console.log(`Better Auth example on ${site.url}; redirect URI ${site.redirectUri}`);
}
