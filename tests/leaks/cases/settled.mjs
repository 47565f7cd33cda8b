// Leak test 6: a retryer kept alive keeps nothing of its settled flows but
// what the state shows (SPEC §1 rule 12). Flows end every way: success,
// failure, aborted by a new execution, aborted mid-wait, a callback that
// threw, an option function's invalid answer. Afterwards, every value the
// state does not show (each flow's arguments, the thrown callback error,
// the invalid answer) must be collectable: weak references to them are
// cleared by gc while the retryers are still reachable.
import { AsyncRetryer } from 'retry-wasm';
import { check, report, settle } from './lib.mjs';

const refs = [];
/** Watches `value` and returns it. */
const watch = (label, value) => {
  refs.push([label, new WeakRef(value)]);
  return value;
};
const fixed = { backoff: 'fixed', baseWait: 1, throwOnError: false };
const keep = [];

// Each scenario makes its values inside its own function, so no local of
// this module holds them once it returns.
async function success() {
  const r = new AsyncRetryer(async () => ({ ok: true }), fixed);
  keep.push(r);
  await r.execute(watch('arguments of a success', { n: 1 }));
}

async function failure() {
  const r = new AsyncRetryer(async () => { throw new Error('down'); }, { ...fixed, maxAttempts: 2 });
  keep.push(r);
  await r.execute(watch('arguments of a failure', { n: 2 }));
}

async function newExecution() {
  let calls = 0;
  const r = new AsyncRetryer(() => (calls++ === 0 ? new Promise(() => {}) : Promise.resolve('second')), fixed);
  keep.push(r);
  const first = r.execute(watch('arguments of a flow aborted by a new execution', { n: 3 }));
  check((await r.execute({ n: 4 })) === 'second', 'the second execution did not succeed');
  check((await first) === undefined, 'the superseded flow did not resolve undefined');
}

async function abortMidWait() {
  const r = new AsyncRetryer(async () => { throw new Error('down'); }, { ...fixed, baseWait: 60_000 });
  keep.push(r);
  const p = r.execute(watch('arguments of a flow aborted while waiting', { n: 5 }));
  await new Promise((resolve) => setTimeout(resolve, 5));
  r.abort();
  check((await p) === undefined, 'the aborted flow did not resolve undefined');
}

async function callbackThrew() {
  const r = new AsyncRetryer(async () => 'ok', {
    ...fixed,
    onSuccess: () => {
      throw watch('an error thrown by onSuccess', new Error('callback'));
    },
  });
  keep.push(r);
  const outcome = await r.execute(watch('arguments of a flow whose callback threw', { n: 6 })).then(
    () => 'fulfilled',
    () => 'rejected',
  );
  check(outcome === 'rejected', 'a throwing onSuccess did not reject the flow');
}

async function invalidAnswer() {
  const r = new AsyncRetryer(async () => { throw new Error('down'); }, {
    ...fixed,
    baseWait: () => watch('an invalid baseWait answer', { not: 'a number' }),
  });
  keep.push(r);
  const outcome = await r.execute(watch('arguments of a flow with an invalid answer', { n: 7 })).then(
    () => 'fulfilled',
    (e) => e instanceof RangeError,
  );
  check(outcome === true, 'an invalid baseWait answer did not reject with a RangeError (SPEC §3)');
}

for (const scenario of [success, failure, newExecution, abortMidWait, callbackThrew, invalidAnswer]) await scenario();
await settle();

const kept = refs.filter(([, ref]) => ref.deref() !== undefined).map(([label]) => label);
check(keep.every((r) => !r.store.state.isExecuting), 'a retryer is still executing');
const figures = { watched: refs.length, kept: kept.length, retryersAlive: keep.length };
console.log(`  watched ${refs.length} values of settled flows; still reachable: ${kept.length ? kept.join('; ') : 'none'}`);
report(
  'a settled flow leaves nothing on its retryer',
  kept.length === 0 && refs.length >= 8,
  figures,
  `${refs.length} values watched, ${kept.length} still reachable, ${keep.length} retryers alive`,
);
