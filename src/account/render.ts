import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OAuthError } from '../errors.js';
import { formToken } from '../owners/sessions.js';

/** A page of the portal: the signed-in owner, the form token every form carries, the CSP nonces. */
export function renderAccount(request: FastifyRequest, reply: FastifyReply, view: string, data: Record<string, unknown> & { title: string }) {
  const owner = request.owner;
  return reply.view(`account/${view}.eta`, {
    ...data,
    nonce: reply.cspNonce,
    owner: owner && { email: owner.email },
    formToken: owner ? formToken(owner.secret) : '',
  });
}

// What a failure means to the person holding the page, in a sentence; the code and reference come second.
const WHAT_HAPPENED: Record<string, string> = {
  invalid_link: 'This sign-in link has expired or has been used already. Each link works once, within 15 minutes.',
  no_account: 'There is no account for this email address here.',
  forbidden: 'This form did not come from this page, so nothing was changed.',
  not_found: 'There is no such agent in your account.',
  rate_limited: 'There have been too many requests in a short time.',
  temporarily_unavailable: 'We cannot reach our database right now.',
};

/** The portal's error page (a failure of a page or form of /account). */
export function renderAccountError(request: FastifyRequest, reply: FastifyReply, error: OAuthError) {
  reply.code(error.statusCode).headers(error.headers);
  return renderAccount(request, reply, 'error', {
    title: 'Something went wrong',
    whatHappened: WHAT_HAPPENED[error.error] ?? 'That did not work.',
    error: error.error,
    description: error.description,
    referenceId: request.id,
  });
}
