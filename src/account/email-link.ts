import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Forbidden } from '../errors.js';
import { openEmailLink, signInByEmailLink } from '../owner-flows/sign-in.js';
import { requestEmailLink } from '../owners/email-link.js';
import { linkFormCookie, linkFormToken, linkFormTokenMatches, newLinkFormNonce, SESSION_LIFETIMES } from '../owners/sessions.js';
import { byAddress } from '../plugins/rate-limit.js';
import { BODY_REFUSED, errorResponses, FORM_OR_JSON, htmlPage, noBody, RATE_LIMITED, UNAVAILABLE } from '../routes/responses.js';
import { isBrowserForm, refuseForeignOrigin } from './guards.js';
import { renderAccount } from './render.js';

const token = z.string().regex(/^[\w-]{43}$/, 'is not a sign-in link token');

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
      await openEmailLink(app.services, request.query.token);
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
      const started = await signInByEmailLink(app.services, request.body.token, request.owner?.hash, { log: request.log });
      return reply.clearCookie(linkCookie.name, linkCookie.attributes).ownerSession(started).redirect('/account', 303);
    },
  );
}
