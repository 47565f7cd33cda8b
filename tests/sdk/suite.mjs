// Runs every case of cases.mjs for every SDK of adapters.mjs, with
// retryFetch (mode 'retry') and then with plain fetch (mode 'plain', the
// control), one at a time, against one local flaky server. Meant to run
// from its copy under .consumer/ (tests/sdk/run.mjs puts it there), where
// `retry-wasm` is the installed tarball and the SDKs come from the
// repository's node_modules.
//
// Prints one `SDK-RESULT {json}` line per case ({ sdk, mode, id, status:
// pass|fail|na, detail, ms }), `SDK-INFO {json}` lines (versions, what the
// SDKs sent) and `SDK-DONE` once the server is closed; then nothing of it
// is left and the process exits by itself.
//
//   node suite.mjs [--sdk openai,ky] [--case get,stream] [--mode retry|plain]
import { setTimeout as sleep } from 'node:timers/promises';
import { retryFetch } from 'retry-wasm/fetch';
import { ADAPTERS } from './adapters.mjs';
import { CASES } from './cases.mjs';
import { startServer } from './server.mjs';

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? new Set((process.argv[i + 1] ?? '').split(',').filter(Boolean)) : null;
};
const onlySdk = arg('sdk');
const onlyCase = arg('case');
const onlyMode = arg('mode');

/** How long one SDK call may take before the case says it hung. */
const SETTLE_LIMIT_MS = 8000;

class NotApplicable extends Error {}

const describe = (e) => {
  if (e === undefined) return 'undefined';
  if (e === null || typeof e !== 'object') return String(e);
  const name = e.constructor?.name ?? e.name ?? 'Object';
  const msg = e.message ?? JSON.stringify(e);
  const cause = e.cause ? ` (cause: ${describe(e.cause)})` : '';
  return `${name}${e.name && e.name !== name ? `[${e.name}]` : ''}: ${String(msg).slice(0, 200)}${cause}`;
};

class Case {
  constructor({ sdk, mode, server }) {
    this.sdk = sdk;
    this.mode = mode;
    this.plain = mode === 'plain';
    this.server = server;
    this.failures = [];
    this.notes = [];
    this.routes = [];
    /** What retryFetch's callbacks saw (the last fetch made by this.fetch()). */
    this.calls = { error: 0, success: 0, giveUp: [], probes: 0 };
  }

  /** The fetch the SDK gets: retryFetch with fast test options, or plain fetch. */
  fetch(options = {}) {
    if (this.plain) return globalThis.fetch;
    const calls = (this.calls = { error: 0, success: 0, giveUp: [], probes: 0 });
    return retryFetch({
      baseWait: 5,
      jitter: 0,
      onError: () => calls.error++,
      // openai and Anthropic call fetch('data:,') before their first upload
      // (a FormData support probe): not a call of the case's.
      onSuccess: (response) => (String(response?.url).startsWith('data:') ? calls.probes++ : calls.success++),
      onGiveUp: (_error, reason) => calls.giveUp.push(reason),
      ...options,
    });
  }

  route(steps) {
    const r = this.server.route(steps);
    this.routes.push(r);
    return r;
  }

  /** A client of the SDK against `route`, with `fetch` (default: this.fetch()). */
  client(route, fetch = this.fetch(), extra) {
    return this.sdk.make(route.base, fetch, extra);
  }

  /** The SDK call's outcome, normalised (see adapters.mjs), or { kind: 'hang' }. */
  async settle(promise) {
    let timer;
    const limit = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'hang' }), SETTLE_LIMIT_MS);
    });
    const outcome = Promise.resolve(promise).then(
      (value) => (this.sdk.settle ? this.sdk.settle(value) : { kind: 'ok', value }),
      (error) => this.sdk.classify(error),
    );
    try {
      return await Promise.race([outcome, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  sleep(ms) {
    return sleep(ms);
  }

  async waitFor(cond, ms, what) {
    const end = performance.now() + ms;
    while (!cond()) {
      if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await sleep(5);
    }
  }

  na(reason) {
    throw new NotApplicable(reason);
  }

  check(ok, message) {
    if (!ok) this.failures.push(message);
    return ok;
  }

  eq(actual, expected, what) {
    return this.check(Object.is(actual, expected), `${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
  }

  note(text) {
    this.notes.push(text);
  }

  outcome(r, kind, status, what = 'the SDK call') {
    const shown = r.kind === 'ok' ? 'resolved' : r.kind === 'hang' ? `did not settle within ${SETTLE_LIMIT_MS} ms` : `${r.kind}${r.status ? ` ${r.status}` : ''}: ${describe(r.error)}`;
    const ok = r.kind === kind && (status === undefined || r.status === status);
    this.check(ok, `${what}: ${shown}; expected ${kind}${status ? ` ${status}` : ''}`);
    // The server's failing answers say `flaky <status>`: the SDK read the real response.
    if (ok && r.kind === 'status') this.check(String(r.text).includes(`flaky ${status}`), `${what}: the SDK did not get the server's ${status} body (it shows ${JSON.stringify(String(r.text).slice(0, 100))})`);
    if (ok && r.kind !== 'ok') this.note(`${what}: ${describe(r.error).slice(0, 100)}`);
  }

  requests(route, n, what = 'requests') {
    const seen = route.requests;
    this.check(
      seen.length === n,
      `${what}: the server saw ${seen.length}, expected ${n}: ${seen.map((q) => `${q.method} ${q.path} (${q.length} B)`).join(', ')}`,
    );
  }

  callbacks({ error, success, giveUp }) {
    if (this.plain) return;
    const c = this.calls;
    this.check(
      c.error === error && c.success === success && c.giveUp.join() === giveUp.join(),
      `retryFetch callbacks: onError ×${c.error}, onSuccess ×${c.success}, onGiveUp [${c.giveUp.join(', ')}]; expected onError ×${error}, onSuccess ×${success}, onGiveUp [${giveUp.join(', ')}]`,
    );
  }
}

const print = (tag, obj) => console.log(`${tag} ${JSON.stringify(obj)}`);

async function main() {
  const server = await startServer();
  const sdks = ADAPTERS.filter((a) => !onlySdk || onlySdk.has(a.name));
  const cases = CASES.filter((c) => !onlyCase || onlyCase.has(c.id));
  const modes = ['retry', 'plain'].filter((m) => !onlyMode || onlyMode.has(m));
  print('SDK-INFO', { versions: Object.fromEntries(ADAPTERS.map((a) => [a.name, a.version])), cases: CASES.map((c) => ({ id: c.id, title: c.title })) });

  for (const mode of modes) {
    for (const sdk of sdks) {
      for (const c of cases) {
        const t = new Case({ sdk, mode, server });
        const t0 = performance.now();
        let status = 'pass';
        let detail = '';
        try {
          await c.run(t);
          if (t.failures.length) status = 'fail';
        } catch (e) {
          if (e instanceof NotApplicable) {
            status = 'na';
            detail = e.message;
          } else {
            status = 'fail';
            t.failures.push(`threw ${describe(e)}\n${e?.stack ?? ''}`);
          }
        }
        if (status === 'fail') detail = [...t.failures, ...t.notes.map((n) => `(${n})`)].join('\n');
        else if (status === 'pass') detail = t.notes.join('; ');
        const ms = performance.now() - t0;
        print('SDK-RESULT', { sdk: sdk.name, mode, id: c.id, status, detail, ms: Math.round(ms) });
        // What the SDK sent, once per SDK: from the first case that made a request.
        const first = t.routes.find((r) => r.requests.length)?.requests[0];
        if (mode === 'retry' && first && ['get', 'post-no-key'].includes(c.id)) {
          print('SDK-INFO', { sdk: sdk.name, sent: `${first.method} ${first.path}`, headers: first.headers });
        }
      }
    }
  }
  if (server.stray.length) {
    print('SDK-RESULT', {
      sdk: '-',
      mode: '-',
      id: 'stray',
      status: 'fail',
      detail: `requests that matched no route: ${server.stray.map((q) => `${q.method} ${q.url}`).join(', ')}`,
      ms: 0,
    });
  }
  await server.close();
  console.log('SDK-DONE');
}

main().catch((e) => {
  console.error(e?.stack ?? e);
  process.exitCode = 1;
});
