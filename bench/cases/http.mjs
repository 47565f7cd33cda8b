// HTTP case orchestrator: a local node:http server in this process, and one
// client process (bench/cases/http-child.mjs, with --expose-gc) that holds
// every library and interleaves them chunk by chunk, so their figures of one
// run come from the same seconds; the server's work is not on the client's
// thread. If a library misbehaves, it is reported and the client is run
// again without it.
//
// The server, on 127.0.0.1 (an ephemeral port, keep-alive), counts each
// library's requests apart (the library's id is the last path segment; a
// counter per library, reset by the client before every run): GET /r/<id>
// answers a 503 (body "unavailable") when that counter is a multiple of 3,
// and a 200 with OK_BODY otherwise; GET /always/<id> is always a 503 (the
// client's attempt-count probe); /__reset/<id> and /__count/<id> are the
// client's controls and are not counted.

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { summarize } from '../lib/stats.mjs';
import { runNodeChild } from '../lib/child.mjs';
import { listenLocal } from '../lib/listen.mjs';
import { HTTP_IDS, HTTP_LABELS, HTTP_PEERS, OK_BODY, POLICY } from '../lib/http-adapters.mjs';

export { HTTP_IDS, HTTP_LABELS, HTTP_PEERS };

const CHILD = fileURLToPath(new URL('./http-child.mjs', import.meta.url));
const FAIL_BODY = 'unavailable';

/** Starts the bench server; resolves to { port, close() }. */
export async function startServer() {
  const counts = new Map();
  const of = (id) => {
    let c = counts.get(id);
    if (!c) counts.set(id, (c = { requests: 0, failures: 0, always: 0 }));
    return c;
  };
  const send = (res, status, body, type = 'text/plain') => {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const slash = req.url.lastIndexOf('/');
    const path = req.url.slice(0, slash);
    const c = of(req.url.slice(slash + 1));
    switch (path) {
      case '/r':
        if (++c.requests % 3 === 0) {
          c.failures++;
          send(res, 503, FAIL_BODY);
        } else {
          send(res, 200, OK_BODY, 'application/json');
        }
        return;
      case '/always':
        c.always++;
        send(res, 503, FAIL_BODY);
        return;
      case '/__reset':
        c.requests = c.failures = c.always = 0;
        send(res, 200, '{}', 'application/json');
        return;
      case '/__count':
        send(res, 200, JSON.stringify(c), 'application/json');
        return;
      default:
        send(res, 404, 'not found');
    }
  });
  return listenLocal(server);
}

/**
 * Returns { requests, chunk, runs, policy, concurrency: 1, results: { [id]:
 * { wallMs: summary, serverRequests: summary, probe } }, samples: { [id]:
 * { wallMs: [...], serverRequests: [...] } } (one per run, the libraries'
 * samples of run i interleaved with each other), errors: { [id]: message } }.
 */
export async function runHttpCase({ ids = HTTP_IDS, requests = 1000, chunk = 100, runs = 8, log = () => {} } = {}) {
  const server = await startServer();
  const errors = {};
  let out = null;
  let left = [...ids];
  try {
    while (left.length) {
      const r = await runNodeChild(CHILD, [`--port=${server.port}`, `--ids=${left.join(',')}`, `--requests=${requests}`, `--chunk=${chunk}`, `--runs=${runs}`], 'http');
      if (!r.error) {
        out = r;
        break;
      }
      const bad = r.id && left.includes(r.id) ? [r.id] : left;
      for (const id of bad) {
        errors[id] = r.error;
        log(`  ! http ${id}: ${r.error.split('\n')[0]}`);
      }
      left = left.filter((id) => !bad.includes(id));
    }
  } finally {
    await server.close();
  }
  const results = {};
  const samples = {};
  for (const id of out?.ids ?? []) {
    const w = out.wallMs[id];
    const sr = out.serverRequests[id];
    results[id] = { wallMs: summarize(w), serverRequests: summarize(sr), probe: out.probe[id] };
    samples[id] = { wallMs: w, serverRequests: sr };
    const s = results[id].serverRequests;
    log(`  http ${id}: wall ${results[id].wallMs.median.toFixed(0)} ms (median of ${w.length}), ` +
      `server received ${s.min === s.max ? s.min : `${s.min}-${s.max}`} requests per run`);
  }
  return { requests, chunk: out?.chunk ?? chunk, runs, concurrency: 1, policy: POLICY, results, samples, errors };
}
