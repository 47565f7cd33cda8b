// The one local server of the differential test: node:http on 127.0.0.1,
// recording what every request brought (method, path + query, headers, body
// bytes, and whether the client went away before the response ended) and
// answering per route. Nothing here fails with a retryable status except
// /flaky, which only the documented exception rows use.
//
//   /echo            200, JSON { method, url, bodyBytes }
//   /fixed           200, a fixed text (for `integrity`)
//   /status?code=N&text=T   status N with reason phrase T
//   /redirect?code=N&to=P   redirect N to P (relative, may be another redirect)
//   /stream          200, 20 chunks 50 ms apart (about 1 s)
//   /slow?ms=N       headers after N ms (the timer is cleared if the client leaves)
//   /cookies         two Set-Cookie fields and a repeated custom field
//   /gzip            a gzip-encoded body
//   /empty           204
//   /big             1 MiB of deterministic bytes
//   /flaky           503 on its first request after reset(), then 200
import http from 'node:http';
import { gzipSync } from 'node:zlib';

export const STREAM_CHUNKS = 20;
export const STREAM_GAP_MS = 50;
export const FIXED_BODY = 'a fixed body, for integrity metadata\n';
const GZIP_TEXT = 'compressed text '.repeat(64);
const GZIP_BODY = gzipSync(GZIP_TEXT);
const BIG = Buffer.alloc(1 << 20, 0);
for (let i = 0; i < BIG.length; i++) BIG[i] = (i * 31 + (i >> 8)) & 0xff;

/** Starts the server; resolves { origin, url(path), log, open, arrived(), reset(), close() }. */
export async function startServer() {
  const log = [];
  let open = 0;
  let flakyHits = 0;
  let waiters = [];
  const sockets = new Set();

  const server = http.createServer((req, res) => {
    res.sendDate = false; // a Date field would differ between the two sides
    const entry = {
      method: req.method,
      url: req.url,
      rawHeaders: req.rawHeaders.slice(),
      chunks: [],
      bodyComplete: false,
      responseCut: false,
    };
    log.push(entry);
    open++;
    const w = waiters;
    waiters = [];
    for (const f of w) f(entry);
    res.on('close', () => {
      open--;
      if (!res.writableFinished) entry.responseCut = true;
    });
    req.on('data', (c) => entry.chunks.push(c));
    req.on('error', () => {});
    res.on('error', () => {});
    req.on('end', () => {
      entry.bodyComplete = true;
      route(req, res, entry);
    });
  });
  server.keepAliveTimeout = 2_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  function route(req, res, entry) {
    const u = new URL(req.url, 'http://x');
    const p = u.pathname;
    const text = (status, body, headers = {}, reason) => {
      const buf = Buffer.from(body);
      res.writeHead(status, reason, { 'content-type': 'text/plain; charset=utf-8', 'content-length': buf.length, 'x-route': p, ...headers });
      res.end(buf);
    };
    if (p === '/echo' || p.startsWith('/echo/')) {
      const body = JSON.stringify({ method: req.method, url: req.url, bodyBytes: Buffer.concat(entry.chunks).length });
      return text(200, body, { 'content-type': 'application/json' });
    }
    if (p === '/fixed') return text(200, FIXED_BODY);
    if (p === '/status') {
      const code = Number(u.searchParams.get('code'));
      return text(code, `status ${code}`, {}, u.searchParams.get('text') ?? undefined);
    }
    if (p === '/redirect') {
      const code = Number(u.searchParams.get('code'));
      res.writeHead(code, { location: u.searchParams.get('to'), 'content-type': 'text/plain', 'content-length': 8, 'x-route': p });
      return res.end('redirect');
    }
    if (p === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-route': p });
      let i = 0;
      const tick = () => {
        if (res.destroyed) return;
        res.write(`chunk ${i}\n`);
        if (++i === STREAM_CHUNKS) return res.end();
        timer = setTimeout(tick, STREAM_GAP_MS);
      };
      let timer = setTimeout(tick, 0);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (p === '/slow') {
      const timer = setTimeout(() => text(200, 'slow answer'), Number(u.searchParams.get('ms') ?? 1000));
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (p === '/cookies') {
      res.writeHead(200, [
        ['content-type', 'text/plain'],
        ['set-cookie', 'a=1; Path=/'],
        ['set-cookie', 'b=2; HttpOnly'],
        ['x-multi', 'one'],
        ['x-multi', 'two'],
        ['content-length', '7'],
      ]);
      return res.end('cookies');
    }
    if (p === '/gzip') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': GZIP_BODY.length });
      return res.end(GZIP_BODY);
    }
    if (p === '/empty') {
      res.writeHead(204, { 'x-route': p });
      return res.end();
    }
    if (p === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG.length });
      return res.end(BIG);
    }
    if (p === '/flaky') {
      flakyHits++;
      if (flakyHits === 1) return text(503, 'unavailable, try again');
      return text(200, `recovered after ${flakyHits - 1} failure(s)`);
    }
    text(404, 'no such route');
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const origin = `http://127.0.0.1:${server.address().port}`;

  return {
    origin,
    url: (p) => origin + p,
    log,
    get open() {
      return open;
    },
    /** Resolves with the next request's entry when it arrives. */
    arrived: () => new Promise((resolve) => waiters.push(resolve)),
    /** Per-side state back to the start (the /flaky counter). */
    reset() {
      flakyHits = 0;
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
      });
    },
  };
}

/**
 * What the server received, in a form two sides can be compared in:
 * header names lower-cased (HTTP field names are case-insensitive, RFC 9110
 * §5.1), grouped by name with their values in order (the order of values of
 * one field is significant; the order between different fields is not,
 * §5.3), sorted by name. Every header is kept. A multipart body is compared
 * field by field with its boundary replaced, since each serialisation draws
 * a new boundary: the Content-Type keeps everything but the boundary and
 * Content-Length is corrected by the difference in boundary lengths.
 */
export function describeReceived(entry) {
  const body = Buffer.concat(entry.chunks);
  const groups = new Map();
  for (let i = 0; i < entry.rawHeaders.length; i += 2) {
    const name = entry.rawHeaders[i].toLowerCase();
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push(entry.rawHeaders[i + 1]);
  }
  const ct = groups.get('content-type')?.[0] ?? '';
  const m = /^multipart\/form-data;\s*boundary=(.+)$/i.exec(ct);
  let bodyView;
  if (m) {
    const declared = m[1].replace(/^"|"$/g, '');
    groups.set('content-type', [ct.replace(m[1], '<boundary>')]);
    // The boundary the body really uses (its first line). It is the declared
    // one, except where fetch re-serialises a FormData for a 307/308 and
    // keeps the first Content-Type (undici does): then both sides show it.
    const first = /^--([^\r\n]{1,200})\r\n/.exec(body.subarray(0, 256).toString('latin1'));
    const boundary = first ? first[1] : declared;
    const occurrences = countOccurrences(body, Buffer.from(boundary));
    if (groups.has('content-length')) {
      const len = Number(groups.get('content-length')[0]);
      groups.set('content-length', [`${len - occurrences * (boundary.length - '<boundary>'.length)} (boundary-normalised)`]);
    }
    bodyView = { multipart: parseMultipart(body, boundary), boundaryOccurrences: occurrences, bodyUsesDeclaredBoundary: boundary === declared };
  } else {
    bodyView = bytesView(body);
  }
  const headers = [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    method: entry.method,
    url: entry.url,
    headers: Object.fromEntries(headers.map(([k, v]) => [k, v.length === 1 ? v[0] : v])),
    body: bodyView,
    bodyComplete: entry.bodyComplete,
    responseCut: entry.responseCut,
  };
}

/** Bytes as text when short and printable, else length + sha-like digest. */
export function bytesView(buf) {
  if (buf.length === 0) return '';
  const text = buf.toString('utf8');
  if (buf.length <= 400 && Buffer.from(text, 'utf8').equals(buf) && !/[\0-\x08\x0e-\x1f]/.test(text)) return text;
  if (buf.length <= 64) return `hex:${buf.toString('hex')}`;
  return `${buf.length} bytes, fnv1a ${fnv1a(buf)}, starts hex:${buf.subarray(0, 16).toString('hex')}`;
}

function fnv1a(buf) {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) {
    h ^= buf[i];
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

function countOccurrences(buf, needle) {
  let n = 0;
  for (let i = buf.indexOf(needle); i >= 0; i = buf.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** The parts of a multipart/form-data body: their headers and bytes, in order. */
export function parseMultipart(body, boundary) {
  const delim = Buffer.from(`--${boundary}`);
  const parts = [];
  let pos = body.indexOf(delim);
  if (pos < 0) return { unparseable: bytesView(body) };
  const preamble = body.subarray(0, pos);
  let epilogue = null;
  while (pos >= 0) {
    let start = pos + delim.length;
    if (body.subarray(start, start + 2).toString() === '--') {
      epilogue = bytesView(body.subarray(start + 2));
      break;
    }
    if (body.subarray(start, start + 2).toString() === '\r\n') start += 2;
    const next = body.indexOf(delim, start);
    if (next < 0) {
      parts.push({ unterminated: bytesView(body.subarray(start)) });
      break;
    }
    let part = body.subarray(start, next);
    if (part.subarray(-2).toString() === '\r\n') part = part.subarray(0, -2);
    const sep = part.indexOf('\r\n\r\n');
    const head = sep < 0 ? part.toString() : part.subarray(0, sep).toString();
    parts.push({ headers: head.split('\r\n'), body: bytesView(sep < 0 ? Buffer.alloc(0) : part.subarray(sep + 4)) });
    pos = next;
  }
  return { preamble: bytesView(preamble), parts, epilogue };
}
