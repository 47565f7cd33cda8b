// Headless Chromium via playwright-core, and a tiny static server for the
// consumer directory. Never downloads a browser: only /usr/bin/chromium (or
// $CHROMIUM_PATH) is used.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { listen } from './endpoints.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export function chromiumAvailable() {
  try {
    fs.accessSync(CHROMIUM, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function skipBanner(what) {
  const line = '!'.repeat(78);
  console.log(`\n${line}\n!!! SKIP: ${what}\n!!! ${CHROMIUM} is not installed (apt-get install chromium, or run .ci/run).\n!!! Under CI=true this is a failure.\n${line}\n`);
}

export async function launchChromium() {
  process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
  '.css': 'text/css',
};

/**
 * Serves `root` on 127.0.0.1 at an ephemeral port. `transform(urlPath, body)`
 * may rewrite a file's text before it is sent. `routes(req, res)`, when given,
 * sees every request first and returns true for one it answered itself
 * (same-origin endpoints for the page and its workers). Resolves { url, close }.
 */
export function serveStatic(root, { transform, routes } = {}) {
  const server = http.createServer((req, res) => {
    if (routes?.(req, res)) return;
    const urlPath = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (urlPath === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    const file = path.join(root, urlPath);
    if (!file.startsWith(root + path.sep)) {
      res.writeHead(403).end();
      return;
    }
    fs.readFile(file, (err, body) => {
      if (err) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${urlPath}`);
        return;
      }
      if (transform) body = transform(urlPath, body) ?? body;
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'cache-control': 'no-store',
      });
      res.end(body);
    });
  });
  return listen(server);
}
