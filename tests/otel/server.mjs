// The otel stage's server: node:http on 127.0.0.1 (a random port), three
// routes, every request counted per id.
//
//   /flaky?id=X&fail=N   the first N requests of id X get 503 ("busy"), the
//                        next ones 200 with {"id":X,"n":<request number>}
//   /slow?id=X&ms=M      200 ("slow") after M ms; the timer is cleared when
//                        the client goes away first (an aborted hedge)
//   /ok?id=X             200 ("ok")
import http from 'node:http';

export async function startServer() {
  const counts = new Map();
  const timers = new Set();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const id = url.searchParams.get('id') ?? '';
    const n = (counts.get(id) ?? 0) + 1;
    counts.set(id, n);
    if (url.pathname === '/flaky') {
      const fail = Number(url.searchParams.get('fail') ?? 0);
      if (n <= fail) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, n }));
      }
    } else if (url.pathname === '/slow') {
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('slow');
      }, Number(url.searchParams.get('ms') ?? 0));
      timers.add(timer);
      res.on('close', () => {
        clearTimeout(timer);
        timers.delete(timer);
      });
    } else if (url.pathname === '/ok') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    url: (path) => `${base}${path}`,
    /** How many requests id X got. */
    count: (id) => counts.get(id) ?? 0,
    close() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
