import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const consoleRoot = fileURLToPath(new URL('.', import.meta.url));

/**
 * What the built page may load: itself, nothing else (everything is bundled, and the API is the
 * same origin). Set on the built page only: Vite's dev server injects styles inline. The
 * retrieval-broker sends a policy of its own as a header (services/retrieval-broker/src/routes/console.ts).
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "object-src 'none'", "base-uri 'none'", "form-action 'none'",
].join('; ');

function contentSecurityPolicy(): Plugin {
  return {
    name: 'gm-console-csp',
    apply: 'build',
    // Right after the charset, so that it covers every element the page loads.
    transformIndexHtml(html) {
      const charset = '<meta charset="utf-8" />';
      if (!html.includes(charset)) throw new Error(`index.html must declare ${charset}: the policy goes right after it`);
      return html.replace(charset, `${charset}\n    <meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}" />`);
    },
  };
}

// Served by the retrieval-broker at /console/, on the API's origin. `build.outDir` is relative
// to this directory unless a caller passes its own (Vite's `build()` with `build.outDir`).
export default defineConfig({
  root: consoleRoot,
  base: '/console/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  plugins: [contentSecurityPolicy()],
  build: {
    outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: false,
  },
  // `vite` (dev) against a local `pnpm start`: the API is proxied so calls stay relative.
  server: { proxy: { '/v1': 'http://127.0.0.1:8080' } },
});
