// A bench case's local HTTP server, listening on 127.0.0.1 at an ephemeral
// port: the one way the http and hedge cases start and stop theirs, and ask
// it for its counters.
import http from 'node:http';

/** Listens `server` on 127.0.0.1; resolves `{ port, close }` (close ends every connection). */
export async function listenLocal(server) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: server.address().port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * GETs `path` of the server at `base` and resolves its JSON: a control
 * request, on a connection of its own (`agent: false`), so it shares no pool
 * (undici's, got's agent) with the libraries under test.
 */
export function control(base, path) {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
  });
}
