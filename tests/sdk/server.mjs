// The flaky server of the SDK tests: one node:http server on 127.0.0.1 (a
// random port) that records every request it gets and answers each route
// from a script.
//
// A route is a path prefix (`/c12`, one per case); `server.route(steps)`
// makes one and returns it. Request n of the route (0-based) is answered by
// steps[min(n, steps.length - 1)]:
//
//   { status, headers?, body?, json? }   an answer (json: a JSON body;
//                                        headersAt(): more headers, computed
//                                        when the answer is sent)
//   { ...answer, delay: ms }             the same answer, `delay` ms after
//                                        the request's body has arrived
//   { drop: true }                       the connection is destroyed once the
//                                        body has arrived (a network error)
//   { status, headers, chunks: [...] }   a streamed answer: each chunk
//                                        written 10 ms after the last, then
//                                        the answer is held open until the
//                                        client goes away
//
// Each request is recorded on its route, in arrival order: method, URL,
// every header (lower-case names, repeated ones joined by ', ' as Node
// does), the body's sha256 and length, and when it arrived, was answered
// and was closed (ms, performance.now()); `closedEarly` when the client went
// away before the answer was complete (an abort that reached the wire).
import { createHash } from 'node:crypto';
import http from 'node:http';

export function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Request headers as one object, names lower-cased, repeats joined. */
function headerObject(raw) {
  const out = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    out[name] = name in out ? `${out[name]}, ${raw[i + 1]}` : raw[i + 1];
  }
  return out;
}

export async function startServer() {
  const routes = new Map();
  let next = 0;
  const stray = [];

  const server = http.createServer((req, res) => {
    const arrived = performance.now();
    const prefix = `/${req.url.split('/')[1] ?? ''}`;
    const route = routes.get(prefix.split('?')[0]);
    const chunks = [];
    const rec = {
      n: route ? route.requests.length : stray.length,
      method: req.method,
      url: req.url,
      path: req.url.slice(prefix.length),
      headers: headerObject(req.rawHeaders),
      arrived,
      bodyEnd: null,
      answered: null,
      closed: null,
      closedEarly: false,
      body: null,
      sha256: null,
      length: 0,
    };
    (route ? route.requests : stray).push(rec);
    let finished = false;
    let timer = null;
    res.on('finish', () => {
      finished = true;
    });
    res.on('close', () => {
      rec.closed = performance.now();
      if (!finished) rec.closedEarly = true;
      clearTimeout(timer);
    });
    req.on('data', (c) => chunks.push(c));
    req.on('error', () => {});
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      rec.bodyEnd = performance.now();
      rec.body = body;
      rec.sha256 = sha256(body);
      rec.length = body.length;
      if (!route) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end(`no route ${prefix}`);
        return;
      }
      const step = route.steps[Math.min(rec.n, route.steps.length - 1)];
      const answer = () => {
        if (step.drop) {
          rec.answered = performance.now();
          req.socket.destroy();
          return;
        }
        const headers = { ...(step.headers ?? {}) };
        let payload = step.body ?? '';
        if (step.json !== undefined) {
          payload = JSON.stringify(step.json);
          headers['content-type'] ??= 'application/json';
        }
        if (step.headersAt) Object.assign(headers, step.headersAt());
        res.writeHead(step.status ?? 200, headers);
        rec.answered = performance.now();
        if (step.chunks) {
          res.flushHeaders();
          const chunks = [...step.chunks];
          const write = () => {
            if (!chunks.length) return; // held open: only the client ends it
            res.write(chunks.shift());
            timer = setTimeout(write, 10);
          };
          write();
          return;
        }
        res.end(payload);
      };
      if (step.delay) timer = setTimeout(answer, step.delay);
      else answer();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;

  return {
    origin,
    /** Requests that matched no route (a test that went astray). */
    stray,
    /** A new route answering by `steps`; see the top of the file. */
    route(steps) {
      const prefix = `/c${++next}`;
      const route = { prefix, base: origin + prefix, steps, requests: [] };
      routes.set(prefix, route);
      return route;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
