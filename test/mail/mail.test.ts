import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../src/logger.js';
import { createMailer } from '../../src/mail/mailer.js';
import { approvalRequestMessage, signInLinkMessage } from '../../src/mail/messages.js';
import { storeName, usingPostgres } from '../helpers/database.js';
import { startLocalServer } from '../helpers/listening.js';
import { cookiesOf, linkForm, signInOwner, useLink } from '../helpers/owner.js';
import { ADMIN_TOKEN, ISSUER, startTestServer } from '../helpers/server.js';
import { linkIn, startSmtp, type TestSmtp } from '../helpers/smtp.js';

function logSink() {
  const sink = { output: '' };
  const stream = new Writable({
    write(chunk, _encoding, done) {
      sink.output += chunk.toString();
      done();
    },
  });
  return { sink, logger: pino(loggerOptions('trace') as pino.LoggerOptions, stream) };
}

describe(`mail to owners (${storeName})`, () => {
  let smtp: TestSmtp;
  beforeAll(async () => {
    smtp = await startSmtp();
  });
  afterAll(() => smtp?.close());

  it('without SMTP_URL writes each message, its link included, to the log, and says so at start', async () => {
    const { sink, logger } = logSink();
    const server = await startTestServer({}, { logger });
    try {
      const email = 'dev@example.com';
      expect((await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email } })).statusCode).toBe(202);
      let line: { mail?: { to: string; text: string } } | undefined;
      for (let i = 0; i < 50 && !line; i++) {
        line = sink.output
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
          .find((l) => l.mail?.to === email);
        if (!line) await new Promise((r) => setTimeout(r, 20));
      }
      const link = /http:\/\/localhost:3000(\/account\/email-link\/callback\?token=[\w-]{43})/.exec(line!.mail!.text)![1];
      expect((await useLink(server.app, link)).statusCode).toBe(303);
    } finally {
      await server.close();
    }
    expect(server.services.mailer.logOnly).toBe(true);
  });

  it('without SMTP_URL also writes each link on a line of its own, for a person to copy from the terminal', async () => {
    const { logger } = logSink();
    let terminal = '';
    const mailer = createMailer({ from: 'x@example.com', terminal: { write: (text: string) => (terminal += text) } });
    const link = 'http://localhost:3000/account/email-link/callback?token=' + 'a'.repeat(43);
    await mailer.send(signInLinkMessage({ to: 'dev@example.com', brand: 'agent-auth', link, minutes: 15 }), logger);
    const lines = terminal.split('\n');
    expect(lines).toContain(link);
    expect(lines.find((l) => l.includes('dev@example.com'))).toMatch(/^Mail to dev@example\.com: .*sign-in link/);
    // Nothing but links, each alone on its line: no escaped newline, no JSON around them.
    expect(lines.filter((l) => l.includes('http'))).toEqual([link]);
  });

  it.runIf(!usingPostgres)(
    'names the mail mode in the start banner’s values, never SMTP credentials',
    async () => {
      expect(createMailer({ from: 'x@example.com' }).describe()).toMatch(/^log-only/);
      const withSmtp = await startLocalServer({ ADMIN_TOKEN, SMTP_URL: smtp.url.replace('smtp://', 'smtp://user:hunter2@') });
      await withSmtp.stop();
      expect(withSmtp.server.mail).toBe(smtp.url);
    },
    90_000,
  );

  it('sends from MAIL_FROM, or by default from the brand at no-reply@ the issuer’s host, in plain text and HTML', async () => {
    for (const [env, from] of [
      [{ MAIL_FROM: 'Example Auth <auth@mail.example.org>' }, { address: 'auth@mail.example.org', name: 'Example Auth' }],
      [{ BRAND_NAME: 'Acme Sign-in' }, { address: 'no-reply@localhost', name: 'Acme Sign-in' }],
    ] as const) {
      const server = await startTestServer({ SMTP_URL: smtp.url, ...env });
      try {
        const email = `from-${Math.random().toString(36).slice(2)}@example.com`;
        await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email } });
        const mail = await smtp.next(email);
        expect(mail.from).toEqual(from);
        const link = linkIn(mail);
        expect(mail.text).toContain(link);
        expect(mail.html).toContain(link);
      } finally {
        await server.close();
      }
    }
  });

  it('with SMTP_URL logs neither the link nor the session', async () => {
    const { sink, logger } = logSink();
    const server = await startTestServer({ SMTP_URL: smtp.url }, { logger });
    try {
      const email = 'private@example.com';
      await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email } });
      const mail = await smtp.next(email);
      const path = new URL(/http\S+/.exec(mail.text)![0]).pathname + new URL(/http\S+/.exec(mail.text)![0]).search;
      const page = await server.app.inject({ url: path });
      const used = await server.app.inject({
        method: 'POST',
        url: '/account/email-link/callback',
        headers: { cookie: cookiesOf(page), origin: ISSUER },
        payload: linkForm(page.body),
      });
      const session = used.cookies.find((c) => c.name === 'agent_auth_owner')!.value;
      await server.app.inject({ url: '/account/api/me', headers: { cookie: `agent_auth_owner=${session}` } });
      expect(sink.output).toContain('owner signed in by email link');
      const token = path.split('token=')[1];
      for (const secret of [token, session, linkForm(page.body).csrf, page.cookies[0].value]) expect(sink.output).not.toContain(secret);
      expect(sink.output).not.toContain(email);
      await signInOwner(server.app, smtp, email);
    } finally {
      await server.close();
    }
  });

  it('tells the owner how often approval mails may come: a minute by default, else the interval set', () => {
    const request = { to: 'o@example.com', brand: 'agent-auth', link: `${ISSUER}/account/approvals`, agent: 'a', model: 'm', website: 'w' };
    const mail = (intervalSeconds: number) =>
      approvalRequestMessage({ ...request, origin: 'https://w.example', matchCode: '123', expiresAt: new Date(), waiting: 1, intervalSeconds }).text;
    expect(mail(60)).toContain('at most one of these mails a minute');
    expect(mail(600)).toContain('at most one of these mails in 600 seconds');
  });
});
