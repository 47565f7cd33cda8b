// A small HTTP server that fails the way real services do.
//
//   import { startFlakyServer } from './server.mjs'
//   const server = await startFlakyServer()   // 127.0.0.1, a free port
//   ... fetch(server.url + '/flaky?key=a&fails=2') ...
//   await server.close()                      // no socket or timer left behind
//
// Run it on its own to poke at it with curl:  node demo/server.mjs [port]
//
// Every endpoint takes `key` (requests with the same key share a counter, so
// "fail N times, then succeed" works per scenario) and most take `fails`
// (how many requests fail before the endpoint recovers; default: forever).
//
//   /ok                          200 at once
//   /flaky?fails=N&status=500    N times `status`, then 200
//   /unavailable?fails=N&after=S 503 with `Retry-After: S` (delta-seconds), then 200
//   /rate-limited?fails=N&after=S&form=seconds|date
//                                429 with `Retry-After` as seconds or as an
//                                HTTP-date S seconds from now, then 200
//   /reset?fails=N               the TCP connection is destroyed without a response
//   /slow?fails=N&ms=M           the response comes after M ms, then fast 200s
//   /tail?every=N&ms=M&fast=F    a slow tail: every Nth request of the key
//                                (20) answers after M ms (800), the others
//                                after F ms (5); a request the client
//                                abandons first is logged as cancelled
//   /hang                        never answers (until the client gives up)
//   /notfound                    404, which no retry can fix
//   /down                        always 503 without Retry-After: a dead backend
//   /orders?fails=N              POST only: 503 (no Retry-After) N times, then
//                                201; the answer says how many requests this
//                                key received, and the log records each one's
//                                Idempotency-Key
//   /hash?fails=N&status=S       reads the whole request body and logs its
//                                sha256 and size, answers `status` (500) N
//                                times, then 200 with every hash it received
//
// Every response carries `Connection: close`, so no idle keep-alive socket
// outlives a request on either side.
//
// startOutageBackend() (below) is a second kind: a backend of its own that
// answers 200, then fails every request for a while, then recovers, on a
// clock that starts when the caller says.

import { createHash } from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';

export async function startFlakyServer({ port = 0, host = '127.0.0.1' } = {}) {
  const counters = new Map(); // key -> requests seen
  const log = []; // { t, path, key, n, outcome }
  const pending = new Set(); // timers of slow responses
  const open = new Set(); // requests not yet answered (slow / hang)
  const stats = { requests: 0, cancelledByClient: 0, byKey: counters, log };
  let closing = false;

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const q = url.searchParams;
    const key = q.get('key') ?? url.pathname;
    const n = (counters.get(key) ?? 0) + 1; // 1-based request number for this key
    counters.set(key, n);
    stats.requests++;
    const fails = q.has('fails') ? Number(q.get('fails')) : Infinity;
    const failing = n <= fails;
    const entry = { t: Date.now(), path: url.pathname, key, n, outcome: '' };
    log.push(entry);

    const send = (status, body, headers = {}) => {
      entry.outcome = String(status);
      res.writeHead(status, {
        'content-type': 'application/json',
        connection: 'close',
        ...headers,
      });
      res.end(JSON.stringify(body));
    };
    const ok = () => send(200, { ok: true, key, request: n });

    // A request the client abandons before we answer (slow / hang).
    const holdOpen = (onCancel) => {
      open.add(res);
      res.on('close', () => {
        open.delete(res);
        if (!res.writableFinished && !closing) {
          stats.cancelledByClient++;
          entry.outcome = 'cancelled by client';
          onCancel?.();
        }
      });
    };

    switch (url.pathname) {
      case '/ok':
        return ok();
      case '/flaky':
        return failing
          ? send(Number(q.get('status') ?? 500), { error: 'transient failure', request: n })
          : ok();
      case '/unavailable':
        return failing
          ? send(503, { error: 'service unavailable' }, { 'retry-after': q.get('after') ?? '1' })
          : ok();
      case '/rate-limited': {
        if (!failing) return ok();
        const after = Number(q.get('after') ?? 1);
        const value =
          q.get('form') === 'date'
            ? new Date(Date.now() + after * 1000).toUTCString()
            : String(after);
        return send(429, { error: 'too many requests' }, { 'retry-after': value });
      }
      case '/reset':
        if (!failing) return ok();
        entry.outcome = 'connection reset';
        return req.socket.destroy();
      case '/slow': {
        if (!failing) return ok();
        const timer = setTimeout(() => {
          pending.delete(timer);
          ok();
        }, Number(q.get('ms') ?? 1000));
        pending.add(timer);
        return holdOpen(() => {
          clearTimeout(timer);
          pending.delete(timer);
        });
      }
      case '/tail': {
        const slow = n % Number(q.get('every') ?? 20) === 0;
        const timer = setTimeout(() => {
          pending.delete(timer);
          ok();
        }, Number(slow ? q.get('ms') ?? 800 : q.get('fast') ?? 5));
        pending.add(timer);
        entry.slow = slow;
        return holdOpen(() => {
          clearTimeout(timer);
          pending.delete(timer);
        });
      }
      case '/hang':
        entry.outcome = 'hanging';
        return holdOpen();
      case '/notfound':
        return send(404, { error: 'no such thing' });
      case '/down':
        return send(503, { error: 'backend down' });
      case '/orders': {
        entry.method = req.method;
        entry.idempotencyKey = req.headers['idempotency-key'] ?? null;
        if (req.method !== 'POST') return send(405, { error: 'POST only' }, { allow: 'POST' });
        // Drained before answering, so the client is never cut off mid-upload.
        req.resume();
        return req.on('end', () =>
          failing
            ? send(503, { error: 'order service briefly unavailable', request: n })
            : send(201, { ok: true, key, order: `ord-${key}`, requestsReceived: n }),
        );
      }
      case '/hash': {
        const hash = createHash('sha256');
        let bytes = 0;
        req.on('data', (chunk) => {
          hash.update(chunk);
          bytes += chunk.length;
        });
        return req.on('end', () => {
          entry.method = req.method;
          entry.sha256 = hash.digest('hex');
          entry.bytes = bytes;
          const received = log.filter((e) => e.key === key && e.sha256).map(({ n: i, sha256, bytes: b }) => ({ n: i, sha256, bytes: b }));
          return failing
            ? send(Number(q.get('status') ?? 500), { error: 'transient failure', request: n, received })
            : send(200, { ok: true, key, request: n, received });
        });
      }
      default:
        return send(404, { error: 'unknown endpoint' });
    }
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    stats,
    hits: (key) => counters.get(key) ?? 0,
    /** Stops listening, drops every open connection, clears every timer. */
    close() {
      closing = true;
      for (const timer of pending) clearTimeout(timer);
      pending.clear();
      for (const res of open) res.destroy();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/**
 * A backend that dies and comes back on a schedule, for the circuit breaker
 * part: healthy until `downAt` ms after `start()`, then every request fails
 * with a 503 (no Retry-After) for `downFor` ms, then healthy again. Its
 * own server, so its
 * origin is its own circuit. Each request is logged as { t, status } with t
 * in ms after `start()`.
 */
export async function startOutageBackend({ downAt, downFor, host = '127.0.0.1' }) {
  const log = [];
  let t0 = null;
  const server = http.createServer((req, res) => {
    const t = t0 === null ? 0 : performance.now() - t0;
    const down = t0 !== null && t >= downAt && t < downAt + downFor;
    const entry = { t, status: down ? 503 : 200 };
    log.push(entry);
    // The body is not awaited by anyone: read it off so the socket can close.
    req.resume();
    res.writeHead(entry.status, { 'content-type': 'application/json', connection: 'close' });
    res.end(down ? '{"error":"backend down"}' : '{"ok":true}');
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address();
  return {
    url: `http://${host}:${port}`,
    origin: `http://${host}:${port}`,
    log,
    downAt,
    upAt: downAt + downFor,
    /** Starts the schedule's clock; returns performance.now() of that moment. */
    start() {
      t0 = performance.now();
      return t0;
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

// `node demo/server.mjs [port]`: serve until Ctrl-C.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const server = await startFlakyServer({ port: Number(process.argv[2] ?? 0) });
  console.log(`flaky server on ${server.url}  (try: curl -i ${server.url}/unavailable)`);
  process.once('SIGINT', () => server.close().then(() => console.log('closed')));
}
