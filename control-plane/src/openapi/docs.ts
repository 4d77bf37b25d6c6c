// GET /docs: the API reference (Swagger UI from the swagger-ui-dist package, served from this process: no CDN, no
// key), reading the document at ./openapi.json. Hidden from the OpenAPI document itself.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { DOCS_PATH } from '../auth/surfaces.js';

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The only files served under /docs/: nothing else of the package (or the disk) is reachable. */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

// Relative URLs: the page works at /docs behind any path prefix; ./openapi.json is the document served by this API.
// validatorUrl null: Swagger UI would otherwise send the document to an online validator for its badge.
const INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: './openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    persistAuthorization: false,
  });
};
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference</title>
<link rel="stylesheet" href="./docs/swagger-ui.css">
<link rel="icon" type="image/png" href="./docs/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="./docs/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="./docs/swagger-ui-bundle.js"></script>
<script src="./docs/initializer.js"></script>
</body>
</html>
`;

// Scripts only from here; "Try it out" may call the server URL of the document, which can be another origin.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self' http: https:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

export function registerDocs(app: FastifyInstance): void {
  const hidden = { schema: { hide: true } };
  app.get(DOCS_PATH, hidden, async (_request, reply) =>
    reply.header('content-security-policy', CSP).type('text/html; charset=utf-8').send(PAGE),
  );
  app.get(`${DOCS_PATH}/initializer.js`, hidden, async (_request, reply) =>
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'no-cache').send(INITIALIZER),
  );
  const cache = new Map<string, Promise<Buffer>>();
  for (const [file, type] of Object.entries(ASSETS)) {
    app.get(`${DOCS_PATH}/${file}`, hidden, async (_request, reply) => {
      let content = cache.get(file);
      if (!content) {
        content = readFile(join(SWAGGER_UI_DIR, file));
        cache.set(file, content);
        content.catch(() => cache.delete(file));
      }
      return reply
        .type(type)
        .header('cache-control', 'public, max-age=3600')
        .send(await content);
    });
  }
}
