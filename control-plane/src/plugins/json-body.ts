// Body parsing: application/json only (spec Global conventions §6; text/plain is removed, so other types are 415;
// the zone import alone adds text/plain and multipart in its own scope, areas/records/import-body.ts),
// and an empty JSON body counts as no body, so `DELETE` sent with `Content-Type: application/json` and nothing
// else works as clients expect (a route that needs a body still answers 400 `body must be object`).
import type { FastifyInstance } from 'fastify';

export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') {
      done(null, undefined);
      return;
    }
    parseJson(request, body as string, done);
  });
}
