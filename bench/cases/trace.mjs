// Trace case orchestrator: what tracing costs retry-wasm's success path
// (SPEC §2d). One call is `asyncRetry(async () => 42, { maxAttempts: 3,
// backoff: 'fixed', baseWait: 0 })` awaited, as in the success case, under
// four subscriber setups:
//
//   off        nobody subscribed to the engine's channels (the default);
//   channels   no-op handlers for every event of the tracing channels
//              `retry-wasm:execute` and `retry-wasm:attempt`, and on the
//              channel `retry-wasm:backoff` (node:diagnostics_channel);
//   otel-noop  `instrumentRetries({ tracerProvider })` of `retry-wasm/otel`
//              with the API's no-op tracer provider (spans not recording);
//              metrics through the API's global no-op meter;
//   otel-sdk   `instrumentRetries` with the SDK's `BasicTracerProvider`
//              (sdk-trace-base: spans recorded and ended, handed to a span
//              processor that only counts them).
//
// No context manager is registered (the API's no-op one), so the figures
// hold no AsyncLocalStorage: a Node SDK's context manager turns on Node's
// promise hooks, which cost every promise of the process, not the retries.
//
// One process per setup (cases/trace-child.mjs), each installing its setup
// once before anything runs, as an app does: subscribing and unsubscribing
// in one process, sample after sample, left the JIT's code for both states
// behind, and the no-subscriber side measured 1.2-2.7× its figure in a
// process that never subscribed. In each round the four processes run one
// after another, in an order rotated by round; a process's figure is the
// median of its samples. Reported: per setup the median over rounds;
// against `off`, the median over rounds of the ratio (and of the
// difference) to the `off` process of the same round.

import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';
import { summarize } from '../lib/stats.mjs';

const CHILD = fileURLToPath(new URL('./trace-child.mjs', import.meta.url));

export const TRACE_SETUPS = {
  off: 'no subscriber',
  channels: 'no-op channel subscribers',
  'otel-noop': 'instrumentRetries, no-op tracer',
  'otel-sdk': 'instrumentRetries, SDK tracer',
};

/**
 * Returns { results: { [setup]: summary over rounds + perRound }, ratios: {
 * [setup]: { vsOff, vsOffP25, vsOffP75, overNs } }, errors: { [setup]:
 * message }, skipped: { [setup]: message }, rounds }.
 */
export async function runTraceCase({ rounds = 6, samples = 10, sampleMs = 20, warmupMs = 300, warmupCalls = 50_000, log = () => {} } = {}) {
  const ids = Object.keys(TRACE_SETUPS);
  const perRound = Object.fromEntries(ids.map((id) => [id, []]));
  const errors = {};
  const skipped = {};
  for (let round = 0; round < rounds; round++) {
    const order = ids.map((_, j) => ids[(j + round) % ids.length]);
    const got = {};
    for (const id of order) {
      if (errors[id] || skipped[id]) continue;
      const r = await runNodeChild(CHILD, [id, `--samples=${samples}`, `--sample-ms=${sampleMs}`, `--warmup-ms=${warmupMs}`, `--warmup-calls=${warmupCalls}`], id);
      if (r.error) {
        if (r.error.startsWith('skipped: ')) skipped[id] = r.error.slice('skipped: '.length);
        else errors[id] = r.error;
        log(`  ! ${TRACE_SETUPS[id]}: ${r.error.split('\n')[0]}`);
        continue;
      }
      got[id] = summarize(r.samples).median;
    }
    for (const id of ids) perRound[id].push(got[id] ?? null);
    log(`  round ${round + 1}: ${ids.filter((id) => got[id] != null).map((id) => `${id} ${Math.round(got[id])}`).join(', ')} ns/call`);
  }
  const results = {};
  for (const id of ids) {
    const xs = perRound[id].filter((x) => x != null);
    if (xs.length) results[id] = { ...summarize(xs), perRound: perRound[id] };
  }
  const ratios = {};
  for (const id of ids) {
    if (id === 'off' || !results[id] || !results.off) continue;
    const q = [];
    const d = [];
    perRound[id].forEach((x, i) => {
      const off = perRound.off[i];
      if (x == null || off == null) return;
      q.push(x / off);
      d.push(x - off);
    });
    if (!q.length) continue;
    const s = summarize(q);
    ratios[id] = { vsOff: s.median, vsOffP25: s.p25, vsOffP75: s.p75, overNs: summarize(d).median };
  }
  return { results, ratios, errors, skipped, rounds };
}
