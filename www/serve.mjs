// A tiny static server for the retry-wasm playground.
//
//   node www/serve.mjs        serves on http://127.0.0.1:${PORT || 8080}
//
// Routes:
//   /                      www/index.html (its import map maps `retry-wasm`)
//   /<file>                files of www/
//   /retry-wasm/js/...     the package's js/ folder  (entry: /retry-wasm/js/index.js)
//   /retry-wasm/pkg/...    the package's pkg/ folder (the built wasm)
//   /vendor/<name>.js      an OpenTelemetry package for the spans panel, bundled
//                          for browsers by esbuild (a dev dependency) when first
//                          asked for and kept in memory: VENDOR below lists them
//
// Nothing outside those folders is reachable. Tests import `startServer`.

import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const WWW = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(WWW, '..');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ts': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The bundles served under /vendor/: one ES module per package, for the
 * import map of index.html. `@opentelemetry/api` stays external in the SDK's
 * bundle, so the page, the SDK and `retry-wasm/otel` share one API instance.
 * None of this is part of the package.
 */
const VENDOR = {
  'opentelemetry-api.js': { entry: '@opentelemetry/api', external: [] },
  'opentelemetry-sdk-trace-base.js': { entry: '@opentelemetry/sdk-trace-base', external: ['@opentelemetry/api'] },
};
const bundles = new Map();

/** The bundle of `name` (a key of VENDOR), built once per server. */
function vendorBundle(name) {
  if (!bundles.has(name)) {
    const { entry, external } = VENDOR[name];
    const built = import('esbuild').then(({ build }) =>
      build({
        stdin: { contents: `export * from '${entry}';`, resolveDir: ROOT, sourcefile: `vendor/${name}`, loader: 'js' },
        bundle: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        external,
        write: false,
        logLevel: 'silent',
        legalComments: 'none',
      }),
    ).then((r) => Buffer.from(`// ${entry}, bundled for the retry-wasm playground by esbuild\n${r.outputFiles[0].text}`));
    built.catch(() => bundles.delete(name)); // retried on the next request
    bundles.set(name, built);
  }
  return bundles.get(name);
}

/** Resolve `rel` inside `base`, or null when it would escape `base`. */
function inside(base, rel) {
  const full = resolve(base, '.' + sep + rel);
  return full === base || full.startsWith(base + sep) ? full : null;
}

/** Map a URL path to a file on disk, or null (404). */
function route(pathname) {
  if (pathname === '/' || pathname === '/index.html') return join(WWW, 'index.html');
  if (pathname.startsWith('/retry-wasm/')) {
    const rest = pathname.slice('/retry-wasm/'.length);
    const [top, ...more] = rest.split('/');
    if ((top !== 'js' && top !== 'pkg') || more.length === 0) return null;
    return inside(join(ROOT, top), more.join('/'));
  }
  const file = inside(WWW, pathname.slice(1));
  if (file === join(WWW, 'serve.mjs')) return null; // the server itself is not part of the page
  return file;
}

/**
 * Start the playground server.
 * @param {{ port?: number, host?: string }} [opts]
 * @returns {Promise<{ url: string, port: number, close: () => Promise<void> }>}
 */
export async function startServer({ port = Number(process.env.PORT ?? 8080), host = '127.0.0.1' } = {}) {
  const server = createServer(async (req, res) => {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      let pathname;
      try {
        pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      } catch {
        res.writeHead(400).end('bad request\n');
        return;
      }
      if (pathname.includes('\0')) {
        res.writeHead(400).end('bad request\n');
        return;
      }
      if (pathname.startsWith('/vendor/')) {
        const name = pathname.slice('/vendor/'.length);
        if (!Object.hasOwn(VENDOR, name)) {
          res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found: ${pathname}\n`);
          return;
        }
        let body;
        try {
          body = await vendorBundle(name);
        } catch (err) {
          res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end(`could not bundle ${VENDOR[name].entry} (npm install the dev dependencies): ${err && err.message}\n`);
          return;
        }
        res.writeHead(200, {
          'content-type': TYPES['.js'],
          'content-length': body.length,
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        });
        res.end(req.method === 'HEAD' ? undefined : body);
        return;
      }
      const file = route(pathname);
      const info = file && (await stat(file).catch(() => null));
      if (!info || !info.isFile()) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found: ${pathname}\n`);
        return;
      }
      const body = await readFile(file);
      res.writeHead(200, {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'content-length': body.length,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`server error: ${err && err.message}\n`);
    }
  });

  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      ok();
    });
  });
  const actual = server.address().port;
  return {
    url: `http://${host}:${actual}/`,
    port: actual,
    close: () =>
      new Promise((ok) => {
        server.close(() => ok());
        server.closeAllConnections?.();
      }),
  };
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (isMain) {
  if (!existsSync(join(ROOT, 'pkg', 'full', 'wasm-bytes.js'))) {
    console.warn('warning: pkg/full/wasm-bytes.js is missing; run `npm run build` first (`npm run www` does).');
  }
  try {
    const { url } = await startServer();
    console.log(`retry-wasm playground: ${url}`);
    console.log('press Ctrl+C to stop');
  } catch (err) {
    console.error(`could not start the server: ${err.message}`);
    process.exit(1);
  }
}
