import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Flash } from './session.js';

/** A form the store would refuse: the page it came from shows why (src/console/index.ts). */
export class FormProblem extends Error {
  constructor(
    message: string,
    readonly back: string,
  ) {
    super(message);
  }
}

/** The first problem of a refused form, for people: the field (spaces for underscores) and what is wrong. */
export function firstProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  const field = issue.path.map((part) => (typeof part === 'number' ? `#${part + 1}` : String(part).replace(/_/g, ' '))).join(' ');
  return field ? `${field}: ${issue.message}` : issue.message;
}

/** The form's fields through the admin API's own schema; a refusal names the first problem. */
export function parseForm<T extends z.ZodType>(schema: T, value: unknown, back: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new FormProblem(firstProblem(parsed.error), back);
}

/** After an action: back to a page (POST, redirect, GET), with what happened. */
export function redirectWith(request: FastifyRequest, reply: FastifyReply, to: string, flash: Flash) {
  request.server.consoleKeys.setFlash(request, reply, flash);
  return reply.redirect(to, 303);
}

/** A console page in its layout: the session's form token, the flash, the navigation. */
export function renderConsole(request: FastifyRequest, reply: FastifyReply, view: string, data: Record<string, unknown> & { title: string }) {
  const signedIn = Boolean(request.consoleSession);
  return reply.view(`console/${view}.eta`, {
    nav: view,
    ...data,
    nonce: reply.cspNonce,
    signedIn,
    formToken: signedIn ? request.server.consoleKeys.formToken(request.consoleSession) : '',
    flash: signedIn ? request.server.consoleKeys.takeFlash(request, reply) : {},
  });
}

/** A website or agent id from a path, kept to what ids look like so it is safe in a redirect. */
export const idPattern = /^[\w-]{1,200}$/;
