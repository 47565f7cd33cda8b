// Leak test 7: engine handles outlive nothing they should. A retryer keeps
// its engine handle for life and the queue of idle retryers to park holds
// handles, so a retryer that dies while queued leaves its number in the
// queue; once the finalizer gives the number back, the engine may hand it
// to anything, the template slot that retryers built from one options
// object share included. Parking that must not happen: here two idle
// retryers die while queued, the next retryer's slot and the template take
// their numbers (in either order), and retryers built from the template
// must still work.
// (Before the fix, retryers built from the parked template never settled,
// or rejected with "could not rebuild a parked retryer".)
import { AsyncRetryer } from 'retry-wasm';
import { check, liveHandles, report, settle } from './lib.mjs';

// More than 512 retryers hold a slot and none can be parked (each waits
// on a promise that never settles), so every idle one is queued.
const busy = Array.from({ length: 600 }, () => {
  const r = new AsyncRetryer(() => new Promise(() => {}));
  r.execute();
  return r;
});

// Two retryers go idle after every construction, so both are queued (a
// construction walks the queue and parks the first idle retryer in it),
// then die there.
async function queueAndDrop() {
  const gates = [];
  const made = [1, 2].map((i) => {
    const r = new AsyncRetryer(() => new Promise((resolve) => gates.push(() => resolve(i))));
    return [r, r.execute()];
  });
  for (const open of gates) open();
  for (const [i, [, p]] of made.entries()) check((await p) === i + 1, 'a queued retryer returned the wrong value');
  return made.map(([r]) => new WeakRef(r));
}
const before = liveHandles();
const dead = await queueAndDrop();
for (let round = 0; round < 5 && (dead.some((r) => r.deref()) || liveHandles() !== before); round++) await settle();
check(dead.every((r) => r.deref() === undefined), 'the two queued retryers were not collected');
check(liveHandles() === before, 'the finalizer did not free the two retryers\' slots');

// A fresh options object of primitives: the first retryer takes one freed
// number, the template of its options the other; the next two are built
// from the template, and each construction walks the parking queue.
const opts = { maxAttempts: 2, backoff: 'fixed', baseWait: 1 };
const built = ['b', 'c', 'd', 'e'].map((v) => [v, new AsyncRetryer(async () => v, opts)]);
const results = [];
const hung = () => new Promise((resolve) => setTimeout(resolve, 2_000, 'hung')).then(String);
for (const [v, r] of built) {
  try {
    const got = await Promise.race([r.execute(), hung()]);
    results.push(got === v ? 'ok' : got === 'hung' ? 'never settled' : 'wrong value');
  } catch (e) {
    results.push(`rejected: ${e && e.message}`);
  }
}
for (const r of busy) r.abort();
const live = liveHandles();
console.log(`  retryers built after two queued ones died: ${results.join(', ')}; engine slots held ${live}`);
report(
  'a number left in the parking queue parks nothing it should not',
  results.every((x) => x === 'ok'),
  { results, live },
  results.join(', '),
);
