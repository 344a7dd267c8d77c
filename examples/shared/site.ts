/** What the framework examples (examples/authjs, examples/better-auth) share: options, a page, the listener. */
import type { Server } from 'node:http';
import { pathToFileURL } from 'node:url';

export interface SiteOptions {
  /** agent-auth's issuer URL. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The server issues ID tokens (ID_TOKEN_SIGNING_ALG is set). */
  oidc: boolean;
  port: number;
  host?: string;
  /** The framework signs or encrypts its cookies with it: at least 32 random characters. */
  secret: string;
}

/** The options from the environment, for `npx tsx examples/<framework>/site.ts`. */
export function siteOptionsFromEnv(secretVariable: string, defaultPort: number): SiteOptions {
  const env = process.env;
  for (const name of ['CLIENT_ID', 'CLIENT_SECRET', secretVariable]) if (!env[name]) throw new Error(`set ${name}`);
  return {
    issuer: env.ISSUER ?? 'http://localhost:3000',
    clientId: env.CLIENT_ID!,
    clientSecret: env.CLIENT_SECRET!,
    oidc: env.OIDC === 'true',
    port: Number(env.PORT ?? defaultPort),
    host: env.HOST ?? 'localhost',
    secret: env[secretVariable]!,
  };
}

/** The module at `moduleUrl` is the one node was asked to run. */
export const isMain = (moduleUrl: string) => moduleUrl === pathToFileURL(process.argv[1] ?? '').href;

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The home page: who is signed in, or the sign-in button (`form` is its HTML). */
export function homePage(title: string, email: string | undefined, form: string): string {
  const body = email === undefined ? form : `<p>Signed in as <strong id="email">${escapeHtml(email)}</strong></p>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
}

/** Listens, and returns the function that closes the server. */
export async function listen(server: Server, port: number, host: string): Promise<() => Promise<void>> {
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return () => new Promise((resolve) => server.close(() => resolve()));
}
