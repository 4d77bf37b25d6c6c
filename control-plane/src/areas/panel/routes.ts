// The web panel, served from the control plane's own port: GET /panel/ (and every path under it: the page routes
// in the browser), /panel/assets/panel.js and panel.css. No credential is needed to load the page; it signs in
// (areas/login) and calls the API with its session. A strict Content-Security-Policy: only this origin's script,
// style and fetches; no inline script or style, no framing.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { panelAssets } from './bundle.js';

const publicRoute = { public: true };
const hide = true;

export const PANEL_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Panel</title>
<link rel="stylesheet" href="/panel/assets/panel.css">
<script type="module" src="/panel/assets/panel.js"></script>
</head>
<body>
<div id="app"></div>
<noscript>The panel needs JavaScript. Everything it does can be done through the API: see /docs.</noscript>
</body>
</html>
`;

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', PANEL_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('x-frame-options', 'DENY')
    .header('cache-control', 'no-cache');
}

export default async function panelRoutes(app: FastifyInstance) {
  app.get('/panel', { config: publicRoute, schema: { hide } }, async (_request, reply) => reply.redirect('/panel/'));
  app.get('/panel/assets/panel.js', { config: publicRoute, schema: { hide } }, async (_request, reply) =>
    secure(reply)
      .type('text/javascript; charset=utf-8')
      .send((await panelAssets()).js),
  );
  app.get('/panel/assets/panel.css', { config: publicRoute, schema: { hide } }, async (_request, reply) =>
    secure(reply)
      .type('text/css; charset=utf-8')
      .send((await panelAssets()).css),
  );
  for (const url of ['/panel/', '/panel/*'])
    app.get(url, { config: publicRoute, schema: { hide } }, async (_request, reply) =>
      secure(reply).type('text/html; charset=utf-8').send(INDEX),
    );
}
