import type { FastifyInstance } from 'fastify';
import scalarApiReference from '@scalar/fastify-api-reference';

/** Where the rendered OpenAPI document is served; GET /docs redirects to it. */
export const API_REFERENCE_PATH = '/docs/';

/**
 * The OpenAPI document rendered (Scalar), public like /openapi.json. Everything it loads comes
 * from this server: the page's script is the plugin's bundled copy at /docs/js/scalar.js (the
 * plugin's default `cdn` is that relative path; a `bundle` option would switch to a CDN build,
 * so none is set), the document is /openapi.json, and the options below switch off what would
 * reach out: the default fonts, telemetry, the hosted client button and the AI agent.
 */
export async function apiReference(app: FastifyInstance): Promise<void> {
  await app.register(scalarApiReference, {
    routePrefix: '/docs',
    configuration: {
      url: '/openapi.json',
      pageTitle: 'Governed memory API',
      withDefaultFonts: false,
      telemetry: false,
      hideClientButton: true,
      showDeveloperTools: 'never',
      agent: { disabled: true },
    },
  });
}
