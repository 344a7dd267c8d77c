import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  /** The From header's address and display name. */
  from: { address: string; name: string };
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface TestSmtp {
  /** SMTP_URL for a server that sends through this one. */
  url: string;
  /** Everything received so far, oldest first. */
  received: Mail[];
  /** The next message to `to` (that `matches`) not taken yet; fails after `ms`. */
  next(to: string, ms?: number, matches?: (mail: Mail) => boolean): Promise<Mail>;
  close(): Promise<void>;
}

/** A real SMTP server on a free local port (no TLS, no authentication) that keeps what it receives. */
export async function startSmtp(): Promise<TestSmtp> {
  const received: Mail[] = [];
  const taken = new Set<Mail>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((parsed: ParsedMail) => {
          const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
          const from = parsed.from?.value[0];
          received.push({
            from: { address: from?.address ?? '', name: from?.name ?? '' },
            to: to?.value[0]?.address ?? '',
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: String(parsed.html || ''),
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    async next(to, ms = 5000, matches = () => true) {
      const deadline = Date.now() + ms;
      for (;;) {
        const mail = received.find((m) => !taken.has(m) && m.to.toLowerCase() === to.toLowerCase() && matches(m));
        if (mail) {
          taken.add(mail);
          return mail;
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to} within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The sign-in link a mail carries: the portal's, or one back to a sign-in (the owner path). */
export function linkIn(mail: Mail): string {
  const link = /https?:\/\/\S+\/(?:account\/email-link\/callback\?|authorize\/owner\/email-link\?request_id=[\w-]+&)token=[\w-]+/.exec(
    mail.text,
  )?.[0];
  if (!link) throw new Error(`no sign-in link in: ${mail.text}`);
  return link;
}
