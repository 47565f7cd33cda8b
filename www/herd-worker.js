// Thundering-herd simulation, run by retry-wasm itself under a fake clock.
//
// retry-wasm looks up setTimeout / clearTimeout / Date.now / performance.now at
// call time (SPEC §0), so replacing them in this worker lets hundreds of
// retryers run their whole schedule in a few milliseconds. Every client's
// function fails (the backend is down) and records when it was called.

let now = 0;
let nextId = 1;
const timers = new Map();
const EPOCH = 1_700_000_000_000;

globalThis.setTimeout = (fn, ms = 0, ...args) => {
  const id = nextId++;
  timers.set(id, { id, at: now + Math.max(0, Number(ms) || 0), fn, args });
  return id;
};
globalThis.clearTimeout = (id) => {
  timers.delete(id);
};
Date.now = () => EPOCH + now;
Object.defineProperty(performance, 'now', { value: () => now, configurable: true, writable: true });

// A macrotask that is not a timer, to let every pending microtask run.
const channel = new MessageChannel();
const queue = [];
channel.port1.onmessage = () => queue.shift()?.();
const drain = () =>
  new Promise((resolve) => {
    queue.push(resolve);
    channel.port2.postMessage(0);
  });

const outage = Object.assign(new Error('HTTP 503 Service Unavailable'), { status: 503 });

async function simulate(AsyncRetryer, clients, policy, seedSupported) {
  now = 0;
  timers.clear();
  const times = [];
  const calls = new Uint16Array(clients);
  const flows = [];
  for (let i = 0; i < clients; i++) {
    const opts = { ...policy, throwOnError: false };
    if (opts.seed !== undefined) {
      if (seedSupported) opts.seed = (opts.seed * 7919 + i) >>> 0; // one distinct, reproducible sequence per client
      else delete opts.seed;
    }
    const retryer = new AsyncRetryer(() => {
      if (calls[i]++ > 0) times.push(now); // retries only; every first attempt is at t = 0
      return Promise.reject(outage);
    }, opts);
    flows.push(retryer.execute());
  }
  await drain();
  let steps = 0;
  while (timers.size && steps++ < 200_000) {
    let at = Infinity;
    for (const t of timers.values()) if (t.at < at) at = t.at;
    now = at;
    const due = [...timers.values()].filter((t) => t.at === at).sort((a, b) => a.id - b.id);
    for (const t of due) {
      if (!timers.delete(t.id)) continue;
      t.fn(...t.args);
    }
    await drain();
  }
  await Promise.all(flows);
  return times;
}

let lib;
onmessage = async (e) => {
  const { id, moduleUrl, clients, policies, seedSupported } = e.data;
  try {
    lib ??= await import(moduleUrl);
    const times = [];
    for (const p of policies) times.push(await simulate(lib.AsyncRetryer, clients, p, seedSupported));
    postMessage({ id, times });
  } catch (err) {
    postMessage({ id, error: String((err && err.message) || err) });
  }
};
