import { afterAll, beforeAll } from 'vitest';
import { freePort } from './listening.js';
import type { TestServer } from './server.js';
import { ISSUER, startTestServer } from './server.js';
import { linkIn, startSmtp, type TestSmtp } from './smtp.js';

type Injected = Awaited<ReturnType<TestServer['app']['inject']>>;
type App = TestServer['app'];

/** The cookies a response set, as a Cookie header. */
export const cookiesOf = (res: Injected) =>
  res.cookies
    .filter((c) => c.value)
    .map((c) => `${c.name}=${c.value}`)
    .join('; ');

/** The link page's form fields. */
export const linkForm = (body: string) => ({
  token: /name="token" value="([^"]+)"/.exec(body)?.[1] ?? '',
  csrf: /name="csrf" value="([^"]+)"/.exec(body)?.[1] ?? '',
});

/** Asks for a sign-in link for `email` and reads it from the mail; the path and query of it. */
export async function mailedLink(app: App, smtp: TestSmtp, email: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/account/email-link', payload: { email } });
  if (res.statusCode !== 202) throw new Error(`email-link answered ${res.statusCode}: ${res.body}`);
  const link = new URL(linkIn(await smtp.next(email, 5000, (mail) => mail.subject.includes('sign-in link'))));
  return `${link.pathname}${link.search}`;
}

/** What a browser does with a link: open the page, press its button (on the server of `issuer`). */
export async function useLink(app: App, path: string, issuer = ISSUER) {
  const page = await app.inject({ url: path });
  return app.inject({
    method: 'POST',
    url: '/account/email-link/callback',
    headers: { cookie: cookiesOf(page), origin: issuer },
    payload: linkForm(page.body),
  });
}

/** An owner signed in by email link: the session's Cookie header and JSON calls with it (`issuer`: the server's, when not the default). */
export async function signInOwner(app: App, smtp: TestSmtp, email: string, issuer = ISSUER) {
  const res = await useLink(app, await mailedLink(app, smtp, email), issuer);
  if (res.statusCode !== 303) throw new Error(`the link's form answered ${res.statusCode}: ${res.body}`);
  const cookie = cookiesOf(res);
  return {
    cookie,
    call: (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, on: App = app) =>
      on.inject({
        method,
        url,
        headers: { cookie, ...(method === 'GET' ? {} : { 'content-type': 'application/json', origin: issuer }) },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      }),
  };
}

/**
 * A server listening on http://localhost:<a free port>, its issuer, that mails through `smtp`: what
 * a browser test of the portal needs (a host name, as WebAuthn and the API's Origin check want); `env` adds settings.
 */
export async function startPortalServer(smtp: TestSmtp, env: Record<string, string> = {}): Promise<{ server: TestServer; issuer: string }> {
  const port = await freePort();
  const issuer = `http://localhost:${port}`;
  const server = await startTestServer({ ISSUER: issuer, SMTP_URL: smtp.url, ...env });
  await server.app.listen({ port, host: 'localhost' });
  return { server, issuer };
}

/**
 * For a describe block: a real SMTP server and a test server mailing through it (links asked for from
 * one address without limit, unless `env` says otherwise), started before its tests and closed after.
 */
export function serverWithMail(env: Record<string, string> = {}) {
  const started = {} as { smtp: TestSmtp; server: TestServer };
  beforeAll(async () => Object.assign(started, await startServerWithMail({ RATE_LIMIT_EMAIL_LINK_PER_IP: '1000', ...env })));
  afterAll(() => closeServerWithMail(started));
  return started;
}

/** A real SMTP server and a test server (with `env`) mailing through it. */
export async function startServerWithMail(env: Record<string, string> = {}): Promise<{ smtp: TestSmtp; server: TestServer }> {
  const smtp = await startSmtp();
  return { smtp, server: await startTestServer({ SMTP_URL: smtp.url, ...env }) };
}

/** Closes what startServerWithMail started (the server first), passing over what never started. */
export async function closeServerWithMail({ smtp, server }: { smtp?: TestSmtp; server?: TestServer }): Promise<void> {
  await server?.close();
  await smtp?.close();
}
