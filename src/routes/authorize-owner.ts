import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { refuseForeignOrigin } from '../account/guards.js';
import { csrfToken, csrfTokenMatches } from '../agent-sign-in/browser-binding.js';
import { lendSignIn, ownerPathOf, passOrAsk, refuseAsOwner } from '../agent-sign-in/owner-sign-in.js';
import { loadBrowserSignIn, requestIdSchema } from '../agent-sign-in/sign-in.js';
import { InvalidRequest, LoginRequired } from '../errors.js';
import { openEmailLink, signInByEmailLink } from '../owner-flows/sign-in.js';
import { requestEmailLink } from '../owners/email-link.js';
import { isFresh } from '../owners/protection.js';
import { currentOwner, ownerSessionCookie, sessionCookie } from '../owners/sessions.js';
import { type OwnerStep, renderSignInPage } from '../pages/sign-in-pages.js';
import { byAddress } from '../plugins/rate-limit.js';
import { displayText } from '../protocol/text.js';
import { describeClient } from './authorize.js';
import { htmlPage, noBody, RATE_LIMITED, UNAVAILABLE } from './responses.js';

const linkToken = z.string().regex(/^[\w-]{43}$/, 'is not a sign-in link token');
const form = { request_id: requestIdSchema, csrf_token: z.string().min(1).max(200) };
const FORM = ['application/x-www-form-urlencoded'];
const PAGE_ERRORS = {
  400: htmlPage(
    'Error page: invalid_request (another browser, a bad form token, not waiting for its owner, a client without the owner path), request_expired or access_denied',
  ),
  403: htmlPage('Error page: forbidden (from another site), or fresh_authentication_required'),
  404: htmlPage('Error page: not_found, no such authorization request'),
  503: htmlPage(`Error page: ${UNAVAILABLE}`),
};
const TO_CLIENT = noBody('To the redirect_uri: with code, state and iss; or with error=access_denied, state and iss');

/**
 * The owner path of the authorization page (docs/protocol.md, "People's MCP clients"): under
 * /authorize, so the sign-in's binding cookie rides along everywhere (on plain http it is scoped
 * there). Every step needs that cookie, and every form its token: only the browser that started the
 * sign-in, on this server's pages, moves it on. The owner signs in with the portal's passkey sign-in
 * (the page calls it), or with an email link that leads back here; then answers Allow or Deny.
 */
export default async function authorizeOwnerRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;
  const issuerOrigin = new URL(config.issuer).origin;
  // The portal's budgets for the same actions: links asked for, and sign-ins before anyone is known.
  const linksPerAddress = app.limiter('email-link-ip', config.rateLimits.emailLinkPerIp, byAddress);
  const signInsPerAddress = app.limiter('owner-path-ip', config.rateLimits.passkeySignInPerIp, byAddress);

  /** This browser's sign-in, when its client offers the owner path, and what its page shows. */
  async function ownerSignIn(request: FastifyRequest, requestId: string) {
    const browser = await loadBrowserSignIn(app.services, requestId, request.bindingSecret(requestId), { log: request.log });
    const { details } = browser;
    const { client, resource } = await ownerPathOf(app.services, details);
    const page = {
      requestId,
      clientName: details.client_name,
      resourceName: resource?.name,
      ...describeClient(client),
      redirectUri: details.redirect_uri,
      scope: details.scope,
      expiresAt: details.expires_at,
    };
    const show = (reply: FastifyReply, ownerStep: OwnerStep) => renderSignInPage(reply, 'owner', { ...page, ownerStep });
    return { browser, show, csrf: csrfToken(browser.secret, requestId) };
  }

  /** A form of the owner path: from this server's pages, in the browser of the sign-in, with its token. */
  async function ownerForm(request: FastifyRequest, body: { request_id: string; csrf_token: string }) {
    refuseForeignOrigin(request, issuerOrigin);
    const found = await ownerSignIn(request, body.request_id);
    if (!csrfTokenMatches(found.browser.secret, body.request_id, body.csrf_token))
      throw new InvalidRequest('the form token is invalid; reload the page');
    return found;
  }

  const ownerOf = (request: FastifyRequest) => currentOwner(app.services, request.cookies[sessionCookie(config).name]);

  app.get(
    '/authorize/owner',
    {
      schema: {
        tags: ['browser'],
        description:
          'The "Sign in as the owner" button of the authorization page: the owner signs in (passkey or email link), or, signed in ' +
          'within OWNER_FRESH_SECONDS, is asked whether the client may act as their agent; when their agent for the client exists ' +
          'and their approval policy does not ask, the browser goes on to the client with the code.',
        querystring: z.object({ request_id: requestIdSchema }),
        response: { 200: htmlPage('The sign-in step, or the question (Allow, Deny)'), 303: TO_CLIENT, ...PAGE_ERRORS },
      },
      config: { html: true },
    },
    async (request, reply) => {
      const { request_id: requestId } = request.query;
      const { browser, show, csrf } = await ownerSignIn(request, requestId);
      const owner = await ownerOf(request);
      if (!owner || !isFresh(config, owner)) return show(reply, { step: 'sign-in', csrfToken: csrf });
      const next = await passOrAsk(app.services, browser, owner, { log: request.log });
      if ('location' in next) return reply.unbindBrowser(requestId).redirect(next.location, 303);
      const agentName = next.ask ? (next.ask.name ?? 'Unnamed agent') : null;
      return show(reply, { step: 'consent', csrfToken: csrf, email: owner.email, agentName });
    },
  );

  app.post(
    '/authorize/owner/email-link',
    {
      schema: {
        tags: ['browser'],
        description:
          'Mails the owner a sign-in link that leads back to this sign-in, in this browser. The page says the same whether or ' +
          'not anyone owns the address; limited per client address and per email address.',
        consumes: FORM,
        body: z.object({ ...form, email: z.email().max(320) }),
        response: { 200: htmlPage('Check your mail'), 429: htmlPage(`Error page: ${RATE_LIMITED}`), ...PAGE_ERRORS },
      },
      onRequest: linksPerAddress,
      config: { html: true },
    },
    async (request, reply) => {
      const { request_id: requestId, email } = request.body;
      const { show } = await ownerForm(request, request.body);
      const back = (token: string) => `${config.issuer}/authorize/owner/email-link?request_id=${encodeURIComponent(requestId)}&token=${token}`;
      await requestEmailLink(app.services, email, { log: request.log }, back);
      return show(reply, { step: 'check-mail', email });
    },
  );

  app.get(
    '/authorize/owner/email-link',
    {
      schema: {
        tags: ['browser'],
        description: 'The link in the mail: a page whose button uses it, in the browser of the sign-in only. Opening it spends nothing.',
        querystring: z.object({ request_id: requestIdSchema, token: linkToken }),
        response: { 200: htmlPage('The page with the sign-in button'), ...PAGE_ERRORS },
      },
      config: { html: true },
    },
    async (request, reply) => {
      const { request_id: requestId, token } = request.query;
      const { show, csrf } = await ownerSignIn(request, requestId);
      await openEmailLink(app.services, token);
      return show(reply, { step: 'link', csrfToken: csrf, token });
    },
  );

  app.post(
    '/authorize/owner/email-link/use',
    {
      schema: {
        tags: ['browser'],
        description: 'The button of the link page: spends the link, starts the owner session, and goes back to the sign-in.',
        consumes: FORM,
        body: z.object({ ...form, token: linkToken }),
        response: { 303: noBody('To /authorize/owner, with the owner session cookie'), ...PAGE_ERRORS },
      },
      onRequest: signInsPerAddress,
      config: { html: true },
    },
    async (request, reply) => {
      const { request_id: requestId, token } = request.body;
      await ownerForm(request, request.body);
      // The session this browser held, if any, ends as the new one starts (as in the portal).
      const held = await ownerOf(request);
      const started = await signInByEmailLink(app.services, token, held?.hash, { log: request.log });
      return reply
        .setCookie(...ownerSessionCookie(config, started.sessionSecret))
        .redirect(`/authorize/owner?request_id=${encodeURIComponent(requestId)}`, 303);
    },
  );

  app.post(
    '/authorize/owner/decision',
    {
      schema: {
        tags: ['browser'],
        description:
          'The Allow and Deny buttons: Allow makes (or reuses) the owner’s agent for this client, named agent_name, signs it in ' +
          'and sends the browser on with the code; it needs the owner signed in within OWNER_FRESH_SECONDS. Deny ends the sign-in.',
        consumes: FORM,
        body: z.object({ ...form, decision: z.enum(['allow', 'deny']), agent_name: displayText(200).optional().or(z.literal('')) }),
        response: { 303: TO_CLIENT, 401: htmlPage('Error page: login_required, no owner signed in'), ...PAGE_ERRORS },
      },
      onRequest: signInsPerAddress,
      config: { html: true },
    },
    async (request, reply) => {
      const { request_id: requestId, decision, agent_name: name } = request.body;
      const { browser } = await ownerForm(request, request.body);
      const owner = await ownerOf(request);
      if (!owner) throw new LoginRequired('sign in as the owner first');
      const context = { log: request.log };
      // 303: the browser follows with a GET, never re-posting the form to the client (RFC 9700 4.12).
      const location =
        decision === 'allow'
          ? await lendSignIn(app.services, browser, owner, name || browser.details.client_name, context)
          : await refuseAsOwner(app.services, browser, owner, context);
      return reply.unbindBrowser(requestId).redirect(location, 303);
    },
  );
}
