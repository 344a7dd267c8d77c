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

// The button's icon, as docs/websites.md gives it.
const AGENT_ICON =
  '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path fill="currentColor" fill-rule="evenodd" d="M11 2h2v3h4a3 3 0 0 1 3 3v9a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3V8a3 3 0 0 1 3-3h4zM9 10.5a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3m6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3M8.5 16v1.5h7V16z"/></svg>';

/**
 * The "Sign in with agent" button of docs/websites.md: a link (`a`) to the route that starts the sign-in, or
 * a `button` in a form that POSTs; `attributes` are its others (`id="sign-in" href="/login"`). Styled by
 * the stylesheet that signInStylesheet links.
 */
export function signInWithAgent(tag: 'a' | 'button', attributes: string): string {
  return `<${tag} class="sign-in-with-agent" ${attributes}>${AGENT_ICON}<span>Sign in with agent</span></${tag}>`;
}

/** The button's stylesheet, served by agent-auth at `issuer`. */
export const signInStylesheet = (issuer: string) => `<link rel="stylesheet" href="${escapeHtml(issuer)}/assets/sign-in-with-agent.css">`;

/** The home page: who is signed in, or the sign-in button (`form` is its HTML, see signInWithAgent). */
export function homePage(title: string, issuer: string, email: string | undefined, form: string): string {
  const body = email === undefined ? form : `<p>Signed in as <strong id="email">${escapeHtml(email)}</strong></p>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>${signInStylesheet(issuer)}</head><body>${body}</body></html>`;
}

/** Listens, and returns the function that closes the server. */
export async function listen(server: Server, port: number, host: string): Promise<() => Promise<void>> {
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return () => new Promise((resolve) => server.close(() => resolve()));
}
