import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Forbidden, OAuthError } from '../errors.js';
import { isUsableLink, requestEmailLink, signInWithEmailLink } from '../owners/email-link.js';
import { linkFormCookie, linkFormToken, linkFormTokenMatches, newLinkFormNonce, SESSION_LIFETIMES, sessionCookie } from '../owners/sessions.js';
import { byAddress } from '../plugins/rate-limit.js';
import { BODY_REFUSED, errorResponses, FORM_OR_JSON, htmlPage, noBody, RATE_LIMITED, UNAVAILABLE } from '../routes/responses.js';
import type { LinkRefusal } from '../store/owner-sessions.js';
import { isBrowserForm, refuseForeignOrigin } from './guards.js';
import { renderAccount } from './render.js';

const token = z.string().regex(/^[\w-]{43}$/, 'is not a sign-in link token');

/** A link that is spent, expired or unknown: the page says so, and no cookie is set. */
const REFUSALS: Record<LinkRefusal, string> = {
  invalid_link: 'the sign-in link is spent, expired or unknown',
  no_account: 'no owner has this email address',
  email_taken: 'another account uses this email address now, so yours cannot move to it',
};
export class InvalidLink extends OAuthError {
  constructor(error: LinkRefusal = 'invalid_link') {
    super(error, REFUSALS[error], 400);
  }
}

/**
 * Email-link sign-in (docs/protocol.md, "Owners"): ask for a link, open it (a page that spends
 * nothing), use it (the page's form: the session starts).
 */
export default async function emailLinkRoutes(fastify: FastifyInstance, options: { issuerOrigin: string }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;
  const perAddress = app.limiter('email-link-ip', config.rateLimits.emailLinkPerIp, byAddress);

  app.post(
    '/account/email-link',
    {
      schema: {
        tags: ['owner'],
        description:
          'Mails a sign-in link to the address. The answer is the same whether or not anyone owns the address. ' +
          'Limited per client address and per email address (429 with Retry-After).',
        consumes: FORM_OR_JSON,
        body: z.object({ email: z.email().max(320) }),
        response: {
          202: z.object({}).describe('a link is on its way if the address may sign in (the same answer either way)'),
          ...errorResponses({
            400: 'invalid_request: not an email address',
            403: 'forbidden: posted from another site',
            ...BODY_REFUSED,
            429: RATE_LIMITED,
            503: UNAVAILABLE,
          }),
        },
      },
      onRequest: perAddress,
      config: { html: true, formOrJson: true },
    },
    async (request, reply) => {
      refuseForeignOrigin(request, options.issuerOrigin);
      await requestEmailLink(app.services, request.body.email, { log: request.log });
      reply.code(202);
      if (isBrowserForm(request)) return renderAccount(request, reply, 'check-mail', { title: 'Check your mail', email: request.body.email });
      return {};
    },
  );

  app.get(
    '/account/email-link/callback',
    {
      schema: {
        tags: ['owner'],
        description: 'The link in the mail: a page whose button uses it. Opening it spends nothing (mail scanners open links).',
        querystring: z.object({ token }),
        response: { 200: htmlPage('The page with the sign-in button'), 400: htmlPage('The link is spent, expired or unknown') },
      },
      config: { html: true },
    },
    async (request, reply) => {
      if (!(await isUsableLink(app.services, request.query.token))) throw new InvalidLink();
      const nonce = newLinkFormNonce();
      const cookie = linkFormCookie(config);
      reply.setCookie(cookie.name, nonce, { ...cookie.attributes, maxAge: SESSION_LIFETIMES.idleSeconds });
      return renderAccount(request, reply, 'link', { title: 'Sign in', token: request.query.token, csrf: linkFormToken(nonce) });
    },
  );

  app.post(
    '/account/email-link/callback',
    {
      schema: {
        tags: ['owner'],
        description: 'The button of the link page: spends the link, verifies the email and starts the owner session.',
        consumes: ['application/x-www-form-urlencoded'],
        body: z.object({ token, csrf: z.string().max(200) }),
        response: {
          303: noBody('To /account, with the session cookie'),
          400: htmlPage('The link is spent, expired or unknown (or no owner has the address and sign-up is off)'),
          403: htmlPage('The form did not come from the link page in this browser'),
        },
      },
      config: { html: true },
    },
    async (request, reply) => {
      refuseForeignOrigin(request, options.issuerOrigin);
      const linkCookie = linkFormCookie(config);
      if (!linkFormTokenMatches(request.cookies[linkCookie.name], request.body.csrf)) {
        throw new Forbidden('the sign-in form did not come from the link page in this browser');
      }
      const started = await signInWithEmailLink(app.services, request.body.token, { log: request.log });
      if (typeof started === 'string') throw new InvalidLink(started);
      // A session this browser had before ends: the new one is the only one it holds.
      if (request.owner) await app.services.store.ownerSessions.end(request.owner.hash);
      const session = sessionCookie(config);
      request.log.info('owner signed in by email link');
      return reply
        .clearCookie(linkCookie.name, linkCookie.attributes)
        .setCookie(session.name, started.sessionSecret, { ...session.attributes, maxAge: SESSION_LIFETIMES.absoluteSeconds })
        .redirect('/account', 303);
    },
  );
}
