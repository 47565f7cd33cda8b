// The HTTP endpoints the retryFetch smoke test (fixtures/check.mjs) talks to.
// One counter per key, shared by every route, so each runtime uses its own
// keys:
//   GET  /flaky/<key>  503 for the first two requests, then 200; the body is
//                      always {"key":..., "attempt": <requests so far>}
//   ANY  /fail/<key>   503 every time (same body)
//   GET  /count/<key>  {"key":..., "count": <requests so far>}; not counted
// No Retry-After is sent: the waits are the client's own (baseWait).
import http from 'node:http';

/**
 * A request handler for the routes above: `handle(req, res)` answers and
 * returns true for one of them, and returns false (untouched) otherwise.
 */
export function testEndpoints() {
  const counts = new Map();
  return function handle(req, res) {
    const m = /^\/(flaky|fail|count)\/([^/?#]+)$/.exec(new URL(req.url, 'http://x').pathname);
    if (!m) return false;
    const [, route, raw] = m;
    const key = decodeURIComponent(raw);
    const send = (status, body) => {
      // Drain any request body (a POST's) before answering.
      req.resume();
      req.on('end', () =>
        res
          .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
          .end(JSON.stringify(body)),
      );
    };
    if (route === 'count') {
      send(200, { key, count: counts.get(key) ?? 0 });
      return true;
    }
    const attempt = (counts.get(key) ?? 0) + 1;
    counts.set(key, attempt);
    if (route === 'flaky' && req.method !== 'GET') send(405, { key, attempt });
    else if (route === 'flaky' && attempt > 2) send(200, { key, attempt });
    else send(503, { key, attempt });
    return true;
  };
}

/** The endpoints alone, on 127.0.0.1 at an ephemeral port. Resolves { url, close }. */
export function serveEndpoints() {
  const handle = testEndpoints();
  const server = http.createServer((req, res) => {
    if (!handle(req, res)) res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  return listen(server);
}

/** Listens on 127.0.0.1:0; close() also ends kept-alive connections. */
export function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise((r) => {
            server.close(() => r());
            server.closeAllConnections?.();
          }),
      });
    });
  });
}
