import type { FastifyReply } from 'fastify';
import type { OAuthError } from '../errors.js';
import { redirectOrigin } from '../oauth/redirect.js';
import { scopeGrantsEmail } from '../oauth/scopes.js';

export interface SignInPageData {
  requestId: string;
  clientName: string;
  /** The resource (MCP server) the tokens are for, by its registered name. */
  resourceName?: string;
  /** A client that is a metadata document: the host its client_id URL names, beside the name it gives itself. */
  clientIdHost?: string;
  /** Every redirect URI of the client is on this machine: anyone can publish such a document, so the page says so. */
  loopbackOnly?: boolean;
  /** Where the code goes; its origin is shown to the agent (redirect-origin meta, window.authRequest). */
  redirectUri: string;
  scope: string;
  expiresAt: Date;
  /** Approval page only. */
  approval?: { agentId: string; agentName: string | null; model: string; email: string; csrfToken: string };
  /** Waiting for the owner only: who must approve, and the code they see too. */
  owner?: { email: string; agentName: string | null; matchCode: string };
  /** The waiting page of a client that offers the owner path: its "Sign in as the owner" button. */
  ownerSignIn?: boolean;
  /** The owner path's page only: the step it shows (docs/protocol.md, "People's MCP clients"). */
  ownerStep?: OwnerStep;
}

/**
 * The steps of the owner path's page: the owner signs in (passkey or email link), is told to check
 * their mail, uses the link back in this browser, and is asked whether the client may act as their agent.
 */
export type OwnerStep =
  | { step: 'sign-in'; csrfToken: string }
  | { step: 'check-mail'; email: string }
  | { step: 'link'; csrfToken: string; token: string }
  | { step: 'consent'; csrfToken: string; email: string; agentName: string | null };

// A string literal embedded in a script element: "<" escaped so no value can close the element.
const scriptString = (value: string) => JSON.stringify(value).replace(/</g, '\\u003c');

/**
 * Renders the waiting page (the agent has yet to authenticate), the page that waits for the agent's
 * owner to approve, the approval page (REQUIRE_APPROVAL), or a step of the owner path.
 */
export function renderSignInPage(reply: FastifyReply, page: 'waiting' | 'owner-approval' | 'approval' | 'owner', data: SignInPageData) {
  const origin = redirectOrigin(data.redirectUri);
  return reply.view(`${page}.eta`, {
    ...data,
    nonce: reply.cspNonce,
    expiresAt: data.expiresAt.toISOString(),
    sharesEmail: scopeGrantsEmail(data.scope),
    // Who is asking, as the person can check it: the host the code will be sent to.
    websiteHost: new URL(data.redirectUri).host,
    shared: sharedInPlainWords(data.scope, data.approval?.email ?? (data.ownerStep?.step === 'consent' ? data.ownerStep.email : undefined)),
    redirectOrigin: origin,
    // The object literal agents written for the original Auth Agent match with a pattern (unquoted
    // key, quoted value; request_id first).
    authRequestLiteral: `{ request_id: ${scriptString(data.requestId)}, redirect_origin: ${scriptString(origin)} }`,
  });
}

/** What the website receives, in the words of the person approving (scopes per docs/protocol.md). */
function sharedInPlainWords(scope: string, email: string | undefined): string[] {
  const shared = ["Your agent's id, which tells the website it is the same agent next time"];
  if (scopeGrantsEmail(scope)) shared.push(email ? `Your email address, ${email}` : 'Your email address');
  shared.push('Nothing else: never your name or a password');
  return shared;
}

// What happened, in a sentence for the person in front of the browser; the code and the
// technical description come second, for whoever they ask for help.
const WHAT_HAPPENED: Record<string, string> = {
  request_expired: 'This sign-in took too long and has expired.',
  access_denied: 'This sign-in was declined, so it cannot go on.',
  not_found: 'This sign-in could not be found. It may have expired and been cleared away.',
  invalid_client: 'The website that sent you here is not registered with us, or its registration is switched off.',
  invalid_scope: 'The website asked for information we do not offer.',
  unsupported_response_type: 'The website sent you here with a sign-in link we do not understand.',
  rate_limited: 'There have been too many sign-in attempts from your network in a short time.',
  temporarily_unavailable: 'We cannot reach our database right now.',
  server_error: 'Something went wrong on our side.',
};
const NEXT_STEP: Record<string, string> = {
  rate_limited: 'Wait a minute, then go back to the website and start signing in again.',
  temporarily_unavailable: 'Wait a moment, then go back to the website and start signing in again.',
  server_error: 'Go back to the website and start signing in again in a moment.',
};

/** The error page: what happened, what to do next, then the error code and a reference for support. */
export function renderErrorPage(reply: FastifyReply, error: OAuthError) {
  // The same code means "a broken link" on /authorize and "not from here" later in the sign-in.
  const fromLink = reply.request.url.split('?')[0] === '/authorize';
  const invalidRequest = fromLink ? 'The website sent you here with a sign-in link that is not valid.' : 'This sign-in cannot continue from here.';
  return reply.view('error.eta', {
    error: error.error,
    description: error.description,
    whatHappened: WHAT_HAPPENED[error.error] ?? invalidRequest,
    nextStep: NEXT_STEP[error.error] ?? 'Go back to the website and start signing in again.',
    // The response's x-request-id: the server's log lines for this request carry it as reqId.
    referenceId: reply.request.id,
    at: new Date().toISOString(),
    nonce: reply.cspNonce,
  });
}
