// HTTP case, the client process (every library in it, interleaved):
//   node --expose-gc bench/cases/http-child.mjs --port=N --ids=a,b,...
//        [--requests=N] [--chunk=N] [--runs=N]
//
// The server runs in the parent (bench/cases/http.mjs) on 127.0.0.1:<port>;
// each library sends to a path of its own, so the server counts each
// library's requests apart (see there):
// GET /r/<id>       every third request for <id> since its reset is a 503, the
//                   others a 200 with OK_BODY
// GET /always/<id>  always a 503 (the attempt-count probe)
// /__reset/<id>, /__count/<id>  control (not counted; sent on a connection of
//                   their own, outside the timed parts)
//
// Sequence: build every library's client; probe (one GET /always/<id> each:
// the library must send exactly POLICY.attempts requests and end with the
// 503); a warm-up run of min(REQUESTS, 300) requests; then RUNS timed runs.
// A run sends REQUESTS GETs per library, one after another (the next is sent
// when the previous body has been read), in chunks of CHUNK: chunk after
// chunk, every library sends its next CHUNK requests, in an order rotated by
// one each chunk, each chunk preceded by a minor gc and timed with
// performance.now() from its first request to its last body. A library's
// wall time for the run is the sum of its chunks, so the libraries' figures
// of one run come from the same seconds and a burst of load elsewhere on
// the machine hits all of them. After the run, every response must have been
// a 200 with OK_BODY and the server must have received exactly
// expectedRequests(REQUESTS) of the library's requests.
//
// Prints one JSON line: { ids, requests, chunk, runs, wallMs: { [id]: [...] },
// serverRequests: { [id]: [...] }, probe: { [id]: { status, requests } } }
// or { error, id? }.

import http from 'node:http';
import { OK_BODY, POLICY, expectedRequests, makeHttpClient, statusOfError } from '../lib/http-adapters.mjs';
import { control as controlRequest } from '../lib/listen.mjs';
import { loadRetryWasm } from '../lib/retry-wasm.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : dflt;
};
const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const PORT = Number(opt('port', 0));
const IDS = opt('ids', '').split(',').filter(Boolean);
const REQUESTS = Number(opt('requests', 1000));
const CHUNK = Math.min(REQUESTS, Number(opt('chunk', 100)));
const RUNS = Number(opt('runs', 8));
const BASE = `http://127.0.0.1:${PORT}`;

class LibraryError extends Error {
  constructor(id, message) {
    super(message);
    this.id = id;
  }
}

// Control requests, on a connection of their own (see listen.mjs).
const control = (path) => controlRequest(BASE, path);

async function main() {
  if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');
  if (!PORT || !IDS.length) throw new Error('--port and --ids are required');
  let mod = null;
  if (IDS.includes('retry-wasm')) {
    const rw = await loadRetryWasm('retry-wasm/fetch');
    if (!rw.mod) throw new LibraryError('retry-wasm', `retry-wasm not available: ${rw.error}`);
    mod = rw.mod;
  }
  const clients = {};
  for (const id of IDS) {
    try {
      clients[id] = await makeHttpClient(id, POLICY, mod);
    } catch (e) {
      throw new LibraryError(id, String((e && e.message) || e));
    }
  }

  // Probe: a URL that always fails must get exactly POLICY.attempts requests
  // and end as a 503 (a Response from retryFetch and the loop, an HTTPError
  // from ky and got).
  const probe = {};
  for (const id of IDS) {
    await control(`/__reset/${id}`);
    let status;
    try {
      [status] = await clients[id].get(`${BASE}/always/${id}`);
    } catch (e) {
      status = statusOfError(e);
      if (status == null) throw new LibraryError(id, `probe: ${String((e && e.stack) || e)}`);
    }
    const { always } = await control(`/__count/${id}`);
    probe[id] = { status, requests: always };
    if (status !== 503 || always !== POLICY.attempts) {
      throw new LibraryError(id, `probe: an always-503 URL ended with ${status} after ${always} requests (expected 503 after ${POLICY.attempts})`);
    }
  }

  async function chunk(id, n, statuses, bodies, offset) {
    const { get } = clients[id];
    const url = `${BASE}/r/${id}`;
    gc({ type: 'minor' }); // not a full gc(): that flushes code
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      let status, body;
      try {
        [status, body] = await get(url);
      } catch (e) {
        throw new LibraryError(id, `request ${offset + i + 1} of the run failed: ${String((e && e.message) || e).split('\n')[0]}`);
      }
      statuses[offset + i] = status;
      bodies[offset + i] = body;
    }
    return performance.now() - t0;
  }

  async function run(runIndex, requests) {
    const ms = {};
    const statuses = {};
    const bodies = {};
    for (const id of IDS) {
      await control(`/__reset/${id}`);
      ms[id] = 0;
      statuses[id] = new Array(requests);
      bodies[id] = new Array(requests);
    }
    for (let c = 0, offset = 0; offset < requests; c++, offset += CHUNK) {
      const n = Math.min(CHUNK, requests - offset);
      for (let k = 0; k < IDS.length; k++) {
        const id = IDS[(k + c + runIndex) % IDS.length];
        ms[id] += await chunk(id, n, statuses[id], bodies[id], offset);
      }
    }
    const received = {};
    const expected = expectedRequests(requests);
    for (const id of IDS) {
      const count = await control(`/__count/${id}`);
      received[id] = count.requests;
      let ok = 0;
      for (let i = 0; i < requests; i++) if (statuses[id][i] === 200 && bodies[id][i] === OK_BODY) ok++;
      if (ok !== requests) {
        const bad = statuses[id].findIndex((s, i) => s !== 200 || bodies[id][i] !== OK_BODY);
        throw new LibraryError(id, `${ok} of ${requests} requests ended in a 200 with the body (first other: #${bad + 1}, status ${statuses[id][bad]}); the server received ${count.requests}`);
      }
      if (count.requests !== expected) {
        throw new LibraryError(id, `the server received ${count.requests} requests for ${requests} 200s (expected ${expected}: one retry for each 503)`);
      }
    }
    return { ms, received };
  }

  await run(0, Math.min(REQUESTS, 300)); // warm-up: JIT, undici or got's agent, the pools' connections
  const wallMs = Object.fromEntries(IDS.map((id) => [id, []]));
  const serverRequests = Object.fromEntries(IDS.map((id) => [id, []]));
  for (let r = 0; r < RUNS; r++) {
    const { ms, received } = await run(r, REQUESTS);
    for (const id of IDS) {
      wallMs[id].push(ms[id]);
      serverRequests[id].push(received[id]);
    }
  }
  return { ids: IDS, requests: REQUESTS, chunk: CHUNK, runs: RUNS, wallMs, serverRequests, probe };
}

try {
  emit(await main());
  // got's and fetch's keep-alive sockets would hold the process open for the
  // server's keep-alive timeout: exit now.
  process.exit(0);
} catch (e) {
  emit({ id: e instanceof LibraryError ? e.id : undefined, error: e instanceof LibraryError ? e.message : String((e && e.stack) || e) });
  process.exit(1);
}
