import type { FastifyInstance } from 'fastify';

/**
 * In `app`'s scope, a JSON body that is empty parses as `{}`: a DELETE, a sign-out or a POST whose
 * fields are all optional (a secret rotation) often carries the JSON content type and no body.
 */
export function emptyJsonIsEmptyObject(app: FastifyInstance) {
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    body === '' ? done(null, {}) : json(request, String(body), done),
  );
}
