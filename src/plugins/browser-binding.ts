import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { bindingCookie, presentedSecret } from '../agent-sign-in/browser-binding.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The binding secret this browser holds for that sign-in, if any (src/agent-sign-in/browser-binding.ts). */
    bindingSecret(requestId: string): string | undefined;
  }
  interface FastifyReply {
    /** Binds this browser to a new sign-in: the cookie lives as long as the request. */
    bindBrowser(requestId: string, secret: string): FastifyReply;
    /** Once the sign-in has ended its cookie has no use left: it stops riding along on every request. */
    unbindBrowser(requestId: string): FastifyReply;
  }
}

/**
 * The sign-in pages' cookies: the browser binding of each sign-in. Registered around those pages
 * only, so nothing else parses cookies.
 */
export default fp(async function browserBinding(app: FastifyInstance) {
  const { config } = app.services;
  await app.register(fastifyCookie);
  app.decorateRequest('bindingSecret', function (requestId: string) {
    return presentedSecret(this.cookies[bindingCookie(config, requestId).name]);
  });
  app.decorateReply('bindBrowser', function (requestId: string, secret: string) {
    const { name, attributes } = bindingCookie(config, requestId);
    return this.setCookie(name, secret, { ...attributes, maxAge: config.ttl.authRequest });
  });
  app.decorateReply('unbindBrowser', function (requestId: string) {
    const { name, attributes } = bindingCookie(config, requestId);
    return this.clearCookie(name, attributes);
  });
});
