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

/** The SMTP transport of SMTP_URL (`smtp://[user:pass@]host:port`, `smtps://…`), or the log. */
export function createMailer(options: { smtpUrl?: string; from: string | { name: string; address: string } }): Mailer {
  if (!options.smtpUrl) {
    return {
      logOnly: true,
      describe: () => 'log-only (SMTP_URL unset): each message, links included, is written to the log',
      async send(message, log) {
        log.info({ mail: { to: message.to, subject: message.subject, text: message.text } }, 'mail (log-only mode, SMTP_URL unset)');
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
