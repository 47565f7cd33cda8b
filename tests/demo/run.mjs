// Runs `node demo/run.mjs` as a child process and checks that the demo
// (1) exits by itself, with code 0, well within a minute;
// (2) reports, in its machine-readable `DEMO-RESULT {json}` line, that every
//     scenario reached its expected outcome and nothing was left behind,
//     and the retryFetch scenarios did what the server saw (requests,
//     statuses, Idempotency-Key, body hashes), not only what the client says,
//     and the circuit breaker part sent fewer requests to its dead backend
//     than the budget alone and closed its circuit after the recovery;
// (3) leaves no process behind (its process group is empty afterwards) and
//     no server listening on the port it used;
// (4) prints no colour codes when stdout is not a TTY.
//
// Usage: node tests/demo/run.mjs   (prints `N passed, N failed`; exit 1 on failure)

import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TIMEOUT_MS = 90_000;

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? `\n     ${detail}` : ''}`);
}

const started = performance.now();
// detached: the demo gets its own process group, so we can later ask whether
// any process of that group is still alive.
const child = spawn(process.execPath, ['demo/run.mjs'], {
  cwd: root,
  detached: true,
  stdio: ['ignore', 'pipe', 'pipe'],
  env: process.env,
});
let stdout = '';
let stderr = '';
child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));

let timedOut = false;
const killer = setTimeout(() => {
  timedOut = true;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {}
}, TIMEOUT_MS);

const [code, signal] = await new Promise((resolve) => child.on('close', (c, s) => resolve([c, s])));
clearTimeout(killer);
const seconds = (performance.now() - started) / 1000;

check(`demo exits by itself (took ${seconds.toFixed(1)} s, limit ${TIMEOUT_MS / 1000} s)`, !timedOut);
check('demo finishes within a minute', seconds < 60, `${seconds.toFixed(1)} s`);
check(`exit code 0 (got ${code}${signal ? `, signal ${signal}` : ''})`, code === 0, stderr.trim().split('\n').slice(-5).join('\n     '));
check('nothing on stderr', stderr.trim() === '', stderr.trim().split('\n').slice(0, 5).join('\n     '));

// The process group of the demo must be gone: kill(-pgid, 0) fails with ESRCH.
let groupGone = false;
try {
  process.kill(-child.pid, 0);
} catch (error) {
  groupGone = error.code === 'ESRCH';
}
check('no process of the demo is left behind', groupGone);

const line = stdout.split('\n').reverse().find((l) => l.startsWith('DEMO-RESULT '));
let result = null;
try {
  result = line ? JSON.parse(line.slice('DEMO-RESULT '.length)) : null;
} catch (error) {
  check('DEMO-RESULT line is valid JSON', false, error.message);
}
check('prints a DEMO-RESULT line', result !== null, stdout.trim().split('\n').slice(-5).join('\n     '));

if (result) {
  check('DEMO-RESULT says ok', result.ok === true, result.error ?? '');
  const scenarios = result.scenarios ?? [];
  const expectedIds = [
    'flaky', 'retry-after-seconds', 'rate-limited', 'retry-after-date', 'reset', 'slow-deadline',
    'slow-per-try', 'hang', 'not-found', 'refused', 'cancel', 'storm-no-budget', 'storm-budget',
    'fetch-retry-after', 'fetch-post-no-key', 'fetch-post-idempotent', 'fetch-body-intact', 'fetch-caller-abort',
    'fetch-hedge', 'breaker-budget-only', 'breaker-circuit',
  ];
  check(
    'every scenario ran',
    expectedIds.every((id) => scenarios.some((s) => s.id === id)),
    `missing: ${expectedIds.filter((id) => !scenarios.some((s) => s.id === id)).join(', ')}`,
  );
  for (const s of scenarios) {
    const exp = s.expected;
    const matches =
      typeof exp === 'object' && exp !== null
        ? s.outcome === exp.outcome && s.attempts === exp.attempts
        : true; // the storm rows are judged by their own checks
    check(
      `scenario ${s.id}: ${s.outcome} after ${s.attempts} attempt(s)`,
      s.ok === true && matches && s.failedChecks.length === 0,
      `expected ${JSON.stringify(exp)}; failed checks: ${s.failedChecks.join('; ')}`,
    );
  }
  const free = scenarios.find((s) => s.id === 'storm-no-budget');
  const budget = scenarios.find((s) => s.id === 'storm-budget');
  if (free && budget) {
    check(
      `a shared RetryBudget stops the storm (${free.attempts} requests without, ${budget.attempts} with)`,
      budget.attempts < free.attempts / 2,
    );
  }
  // retryFetch, as the server saw it: the demo reports the server's own log
  // in `seen`, so a client that miscounts its attempts cannot pass here.
  const fetchExpect = {
    'fetch-retry-after': { outcome: 'resolved:200', attempts: 2, statuses: [503, 200] },
    'fetch-post-no-key': { outcome: 'resolved:503', attempts: 1, statuses: [503] },
    'fetch-post-idempotent': { outcome: 'resolved:201', attempts: 3, statuses: [503, 503, 201] },
    'fetch-body-intact': { outcome: 'resolved:200', attempts: 3, statuses: [500, 500, 200] },
    'fetch-caller-abort': { outcome: 'rejected:caller-reason', attempts: 1, statuses: [503] },
  };
  for (const [id, want] of Object.entries(fetchExpect)) {
    const s = scenarios.find((x) => x.id === id);
    const seen = s?.seen;
    check(
      `retryFetch ${id}: ${want.outcome}, the server saw ${want.attempts} request(s): ${want.statuses.join(' ')}`,
      s?.outcome === want.outcome &&
        s?.attempts === want.attempts &&
        seen?.requests === want.attempts &&
        JSON.stringify(seen?.statuses) === JSON.stringify(want.statuses),
      `got ${JSON.stringify({ outcome: s?.outcome, attempts: s?.attempts, seen })}`,
    );
  }
  const idem = scenarios.find((x) => x.id === 'fetch-post-idempotent')?.seen;
  check('retryFetch: every POST attempt carried the same Idempotency-Key', idem?.sameIdempotencyKey === true, JSON.stringify(idem));
  const body = scenarios.find((x) => x.id === 'fetch-body-intact')?.seen;
  check(
    'retryFetch: the body arrived intact on every attempt (server sha256 = sent sha256)',
    typeof body?.sent === 'string' && body.received?.length === 3 && body.received.every((h) => h === body.sent),
    JSON.stringify(body),
  );

  // Hedged attempts against the slow tail, as the server counted them.
  const tail = scenarios.find((x) => x.id === 'fetch-hedge')?.seen;
  if (tail) {
    const { calls, plain, hedged } = tail;
    check(
      `hedge: p99 ${Math.round(plain.p99)} ms without, ${Math.round(hedged.p99)} ms with (under 100)`,
      plain.p99 >= 700 && hedged.p99 < 100 && hedged.p999 < 200,
      JSON.stringify(tail),
    );
    check(
      `hedge: the server saw ${plain.requests} and ${hedged.requests} requests for ${calls} calls each (≤ 1.10 per call with hedge)`,
      plain.requests === calls && hedged.requests <= 1.1 * calls && hedged.requests === calls + hedged.hedges,
      JSON.stringify(tail),
    );
    check(
      `hedge: one hedge per slow answer (${hedged.slow}), every loser's connection closed by the client`,
      hedged.hedges === hedged.slow && hedged.cancelled === hedged.hedges && plain.slow === calls / 20,
      JSON.stringify(tail),
    );
  } else {
    check('hedge: the scenario reports what the server saw', false);
  }

  // The circuit breaker part: the same dead-then-recovering backend schedule
  // with a RetryBudget only and with a CircuitBreaker beside it, as the
  // backends counted the requests and onStateChange reported the circuit.
  const outage = scenarios.find((x) => x.id === 'breaker-circuit')?.seen;
  if (outage) {
    const { budgetOnly: a, breaker: b, upAt, downAt, changes } = outage;
    check(
      `breaker: ${b.requests} requests reached the backend with the breaker, ${a.requests} with the budget only`,
      b.requests < a.requests && a.requests >= outage.calls,
      JSON.stringify({ a, b }),
    );
    check(
      `breaker: during the outage ${b.duringOutage} requests with it, ${a.duringOutage} without`,
      b.duringOutage < a.duringOutage,
      JSON.stringify({ a, b }),
    );
    check(
      `breaker: ${b.failedFast} calls failed fast with CircuitOpenError (none without the breaker)`,
      b.failedFast > 0 && b.failedFast <= b.failed && a.failedFast === 0,
      JSON.stringify({ a, b }),
    );
    const reasons = changes.map((x) => x.reason);
    const last = changes[changes.length - 1];
    check(
      `breaker: tripped after the backend died (+${b.firstTripMs === null ? '?' : Math.round(b.firstTripMs)} ms ≥ +${downAt} ms)`,
      reasons[0] === 'tripped' && changes[0].t >= downAt,
      JSON.stringify(changes),
    );
    check(
      `breaker: the probe closed the circuit after the backend recovered (+${last?.t} ms, recovered at +${upAt} ms)`,
      last?.reason === 'probe-succeeded' && last.to === 'closed' && last.t >= upAt && b.closedAtMs !== null && b.endState === 'closed',
      JSON.stringify(changes),
    );
    check(
      'breaker: every transition follows the one before (closed → open → half-open → open | closed)',
      changes.every((x, i) => i === 0 ? x.from === 'closed' : x.from === changes[i - 1].to) &&
        changes.every((x) => ({ tripped: 'open', 'break-ended': 'half-open', 'probe-failed': 'open', 'probe-succeeded': 'closed' })[x.reason] === x.to),
      JSON.stringify(changes),
    );
  } else {
    check('breaker: the scenario reports what the backends saw', false);
  }
  check(
    'breaker: the transitions and the state strip are printed',
    /onStateChange/.test(stdout) && /half-open → closed\s+probe-succeeded/.test(stdout) && /^\s+circuit\s+[─█▒]+/m.test(stdout),
  );

  check('the demo reports no leftover sockets or timers', Array.isArray(result.leftovers) && result.leftovers.length === 0, String(result.leftovers));

  // Its server must be closed: connecting to its port is refused.
  if (result.port) {
    const refused = await new Promise((resolve) => {
      const s = net.connect(result.port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(false); });
      s.once('error', () => resolve(true));
    });
    check(`the demo's server on port ${result.port} is closed`, refused);
  }
}

check('no colour codes when stdout is not a TTY', !stdout.includes('\x1b['));
check('prints a summary table', /Summary/.test(stdout) && /scenario\s+│\s+attempts/.test(stdout));

console.log(`\n${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
