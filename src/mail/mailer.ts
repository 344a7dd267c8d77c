import { createTransport } from 'nodemailer';
import type { Log } from '../logger.js';

/** One message, as every template (src/mail/messages.ts) writes it: plain text and simple HTML. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  /** No SMTP_URL: each message, links included, goes to the log instead (development only). */
  logOnly: boolean;
  /** Where mail goes, for the start banner: the SMTP server's host and port, never its credentials. */
  describe(): string;
  /** Sends the message; a failure is logged (without the message's links) and thrown. */
  send(message: MailMessage, log: Log): Promise<void>;
}

/**
 * What a person at the terminal copies in log-only mode: the message's links, each on a line of its own,
 * under a line that says who it is for. The JSON log line holds the message whole, its newlines escaped.
 */
function linksForTerminal(message: Pick<MailMessage, 'to' | 'subject' | 'text'>): string {
  const links = message.text.match(/https?:\/\/\S+/g) ?? [];
  return `\nMail to ${message.to}: ${message.subject}\n${links.map((link) => `${link}\n`).join('')}\n`;
}

/**
 * The SMTP transport of SMTP_URL (`smtp://[user:pass@]host:port`, `smtps://…`), or the log; in log-only
 * mode each message's links are also written to `terminal` (standard error: standard output stays JSON lines).
 */
export function createMailer(options: {
  smtpUrl?: string;
  from: string | { name: string; address: string };
  terminal?: { write(text: string): unknown };
}): Mailer {
  if (!options.smtpUrl) {
    const terminal = options.terminal ?? process.stderr;
    return {
      logOnly: true,
      describe: () => 'log-only (SMTP_URL unset): each message, links included, is written to the log, and its links to standard error',
      async send(message, log) {
        log.info({ mail: { to: message.to, subject: message.subject, text: message.text } }, 'mail (log-only mode, SMTP_URL unset)');
        terminal.write(linksForTerminal(message));
      },
    };
  }
  const url = new URL(options.smtpUrl);
  const transport = createTransport(options.smtpUrl);
  return {
    logOnly: false,
    describe: () => `${url.protocol}//${url.host}`,
    async send(message, log) {
      try {
        await transport.sendMail({ from: options.from, ...message });
      } catch (err) {
        log.warn({ err: { message: (err as Error).message }, subject: message.subject }, 'mail could not be sent');
        throw err;
      }
    },
  };
}
