// Helpers shared by the leak cases. The cases run from .consumer/leaks/ (see
// ../run.mjs), so 'retry-wasm' resolves to the installed package.
//
// Memory is measured as JS heap (heapUsed after gc()) + array buffers + the
// engine's WebAssembly.Memory. Node does not count wasm memory in
// process.memoryUsage().arrayBuffers, so the wasm size is read from the
// memory buffer itself. Wasm memory never shrinks, so its figure is a
// high-water mark.
import http from 'node:http';

export const PACKAGE = 'retry-wasm';
export const MB = 1024 * 1024;
export const dispose = Symbol.dispose ?? Symbol.for('Symbol.dispose');

const entry = import.meta.resolve(PACKAGE);
if (!entry.includes(`/.consumer/node_modules/${PACKAGE}/`)) {
  throw new Error(`'${PACKAGE}' resolved to ${entry}, not into .consumer/node_modules`);
}

// Read only: the exports of the engine instance the package made (kept by
// the engine.mjs preload): its memory, and the table of JavaScript values
// the engine holds. The package first: its entry instantiates the module.
await import(PACKAGE);
const instances = globalThis.__retryWasmInstances;
if (instances?.length !== 1) {
  throw new Error(`expected the one WebAssembly instance 'retry-wasm' made (run with --import ./engine.mjs), found ${instances?.length}`);
}
// Found by kind: the build shortens the module's export names.
const exported = Object.values(instances[0].exports);
const engine = {
  memory: exported.find((e) => e instanceof WebAssembly.Memory),
  values: exported.find((e) => e instanceof WebAssembly.Table),
};

export const turn = () => new Promise((r) => setImmediate(r));

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');

/** Full GCs with event-loop turns between (finalizers run in their own task). */
export async function settle(rounds = 6) {
  for (let i = 0; i < rounds; i++) {
    globalThis.gc();
    await turn();
  }
  globalThis.gc();
}

/** Bytes of the engine's linear memory (it grows, never shrinks). */
export function wasmBytes() {
  return engine.memory.buffer.byteLength;
}

/**
 * Slots of the engine's table of JavaScript values (wasm-bindgen's externref
 * table). It grows when the engine holds more values at once than ever
 * before and never shrinks, so a retryer or flow whose values the engine
 * kept would make it grow with the count.
 */
export function heldSlots() {
  return engine.values.length;
}

/** Memory now (call settle() first). */
export function snapshot() {
  const m = process.memoryUsage();
  const wasm = wasmBytes();
  return {
    heap: m.heapUsed,
    arrayBuffers: m.arrayBuffers,
    wasm,
    total: m.heapUsed + m.arrayBuffers + (Number.isNaN(wasm) ? 0 : wasm),
  };
}

/**
 * Runs `run(n, offset)` over `total` more, in `parts` steps from `offset`,
 * with a settle and a reading after each, printed against `start` (with
 * what `more()` adds); returns each reading's growth over `start`.
 */
async function inSteps(run, { total, offset, start, parts = 4, more = () => '' }) {
  const per = Math.ceil(total / parts);
  const trend = [];
  for (let done = 0; done < total; done += per) {
    const n = Math.min(per, total - done);
    await run(n, offset + done);
    await settle(3);
    const s = snapshot();
    trend.push(s.total - start.total);
    console.log(`  after ${(done + n).toLocaleString('en-US')}: total ${fmtDelta(s.total - start.total)} (heap ${fmtDelta(s.heap - start.heap)}, wasm ${fmtDelta(s.wasm - start.wasm)})${more()}`);
  }
  return trend;
}

/**
 * What the steady-state cases measure: `run(warmup, 0)`, a reading after
 * gc, `total` more in `parts` steps ([`inSteps`], `more` as there), a
 * reading after gc again, each printed with `unit` (what `run` counts).
 * Returns the change between the two readings, whether the engine's value
 * table kept its size, the figures to report, and the detail line's end.
 */
export async function steady(run, { warmup, total, parts, unit, more }) {
  const t0 = performance.now();
  await run(warmup, 0);
  await settle();
  const start = snapshot();
  const slotsBefore = heldSlots();
  console.log(describe(`after ${warmup.toLocaleString('en-US')} warm-up ${unit}`, start));
  const trend = await inSteps(run, { total, offset: warmup, start, parts, more });
  await settle();
  const end = snapshot();
  const slotsAfter = heldSlots();
  const secs = (performance.now() - t0) / 1000;
  console.log(describe(`after ${total.toLocaleString('en-US')} more ${unit}`, end));
  const change = memoryChange(start, end);
  return {
    change,
    slotsKept: slotsAfter === slotsBefore,
    figures: { ...change, trend, heldSlotsBefore: slotsBefore, heldSlotsAfter: slotsAfter, secs: Number(secs.toFixed(1)) },
    tail: `heap ${fmtDelta(change.heapDelta)}, wasm ${start.wasm} -> ${end.wasm} B; engine value table ${slotsBefore} -> ${slotsAfter} slots; ${secs.toFixed(1)} s`,
  };
}

/** A server whose every odd request is a 503, every even one a 200. */
export async function flakyServer() {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const fail = n++ % 2 === 0;
    res.writeHead(fail ? 503 : 200, { 'content-type': 'text/plain' });
    res.end(fail ? 'busy' : 'ok');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) };
}

/** The figures every memory case reports, from two `snapshot()`s. */
export function memoryChange(start, end) {
  return {
    before: start.total,
    after: end.total,
    delta: end.total - start.total,
    heapDelta: end.heap - start.heap,
    wasmBefore: start.wasm,
    wasmAfter: end.wasm,
  };
}

export const fmt = (b) => (Number.isNaN(b) ? 'n/a' : `${b.toLocaleString('en-US')} B`);
export const fmtDelta = (b) => `${b >= 0 ? '+' : ''}${b.toLocaleString('en-US')} B (${(b / MB).toFixed(3)} MB)`;

export function describe(label, s) {
  return `${label}: heap ${fmt(s.heap)}, arrayBuffers ${fmt(s.arrayBuffers)}, wasm ${fmt(s.wasm)}, total ${fmt(s.total)}`;
}

/**
 * Prints the verdict line ../run.mjs reads: `LEAK-RESULT {json}`.
 * Exits non-zero on failure.
 */
export function report(name, ok, figures, detail = '') {
  process.stdout.write(`LEAK-RESULT ${JSON.stringify({ name, ok, figures, detail })}\n`);
  process.exitCode = ok ? 0 : 1;
}

/** Fails the case with a message (a broken assumption, not a leak figure). */
export function check(cond, message) {
  if (!cond) throw new Error(message);
}
