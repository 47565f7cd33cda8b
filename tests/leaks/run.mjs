#!/usr/bin/env node
// Leak tests of the installed package (issue 6, SPEC §1 rule 12). Copies
// cases/ into .consumer/leaks/ so `import 'retry-wasm'` resolves to the
// packed package, then runs each case in its own Node process, two at a time:
//
//   memory   node --expose-gc cases/executions.mjs success|fail-once
//              1,000,000 executions on one retryer: JS heap + wasm memory
//              within 2 MB of the figure after warm-up
//            node --expose-gc cases/retryers.mjs dispose|finalizer|crowd
//              200,000 short-lived retryers freed by Symbol.dispose or only
//              by the FinalizationRegistry: within 2 MB, and the engine's
//              table of JavaScript values does not grow with them; crowd:
//              first 200,000 with no gc() in the loop, only event-loop
//              turns: the host frees them along the way and all of them
//              once collected, and the memory they held is reused
//   flows    node --expose-gc cases/flows.mjs
//              10,000 concurrent flows: the engine's memory per flow within
//              a bound, first attempts in flight and waiting
//   settled  node --expose-gc cases/settled.mjs
//              flows that end every way, on retryers kept alive: nothing
//              the state does not show (arguments, a thrown callback error,
//              an invalid option answer) stays reachable
//   signal   node --expose-gc cases/signal.mjs
//              one outside AbortSignal, 10,000 flows: no listener left
//            node --expose-gc cases/caller-signal.mjs
//              one long-lived caller signal, 12,000 retryFetch calls (a
//              retry each, half the responses unread): memory flat, no
//              listener left
//   collected  node --expose-gc cases/collected.mjs
//              every kind of flow (success, retries, waits with callbacks
//              and a signal, exhausted attempts, shouldRetry false, signal
//              aborts, nesting, timeouts, abort(), hedged attempts,
//              asyncRetry, retryFetch against a local server, callbacks
//              that throw or re-enter, retryers and retryFetch calls
//              sharing a CircuitBreaker through trips, refusals, probes and
//              isolation, a breaker whose listener closes over it):
//              2,000 dropped retryers each, all collected, breakers too,
//              under 1 MB each
//   origins  node --expose-gc cases/origins.mjs
//              one CircuitBreaker behind retryFetch, 40,000 calls each to
//              a new origin, ending every way (a retry, trips, network
//              errors, aborts): memory flat, at most 64 circuits plus those
//              not idle yet
//   short-lived  node --expose-gc cases/short-lived.mjs
//              200,000 short-lived retryers, a third failing once, no
//              gc() in the loop: at most +12 MB; then 2,000,000 more to
//              reach the plateau (Node 24 reaches it late), then at most
//              +2 MB over 1,000,000 more
//   exit     node cases/exit/*.mjs
//              flows with 1-hour deadlines / waits, an outside signal, a
//              budget, every kind of abort, a chaos run of hedged flows
//              (hedged.mjs: every flow settles, every attempt that never
//              settles has its signal aborted), a chaos run of flows
//              sharing circuit breakers (breaker.mjs: the same, and no
//              circuit keeps a permit of a probe that was cut off: after
//              the break every probe is let through): the process exits by
//              itself within EXIT_LIMIT_MS of starting (control.mjs, a
//              process that leaves a timer on purpose, must be caught)
//
// Each case prints its figures and one `LEAK-RESULT {json}` line. Ends with
// `N passed, N failed`; exits 1 on any failure.
//
//   node tests/leaks/run.mjs [--only executions,retryers,collected,short-lived,flows,settled,signal,origins,exit]
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir } from '../../scripts/consumer.mjs';
import { runProcess } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CASE_TIMEOUT_MS = 120_000;
const EXIT_LIMIT_MS = 3_000;
const EXIT_KILL_MS = 6_000;
const CONCURRENCY = Math.max(1, Math.min(2, os.availableParallelism?.() ?? os.cpus().length));

const onlyArg = process.argv.indexOf('--only');
const only = onlyArg > 0 ? new Set((process.argv[onlyArg + 1] ?? '').split(',')) : null;

/** Runs `node args` in cwd; resolves its output, exit code and timings. */
const runNode = (args, { cwd, timeout, marker }) => runProcess(process.execPath, args, { cwd, timeout, marker });

const indent = (text) => text.trimEnd().split('\n').filter((l) => !l.startsWith('LEAK-RESULT ')).map((l) => `      ${l}`).join('\n');

/** A memory or signal case: its verdict is its LEAK-RESULT line. */
function gcCase(group, file, arg) {
  return {
    group,
    label: `${file}${arg ? ` ${arg}` : ''}`,
    async run(dir) {
      const r = await runNode(['--expose-gc', '--import', './engine.mjs', file, ...(arg ? [arg] : [])], { cwd: dir, timeout: CASE_TIMEOUT_MS });
      const line = r.out.split('\n').find((l) => l.startsWith('LEAK-RESULT '));
      const result = line ? JSON.parse(line.slice('LEAK-RESULT '.length)) : null;
      if (r.killed) return { ok: false, name: this.label, detail: `timed out after ${CASE_TIMEOUT_MS / 1000} s`, out: r.out };
      if (!result) return { ok: false, name: this.label, detail: `exit ${r.code}, no LEAK-RESULT line`, out: r.out };
      return { ok: result.ok && r.code === 0, name: result.name, detail: result.detail, out: r.out };
    },
  };
}

/** An exit case: the process must end by itself within EXIT_LIMIT_MS. */
function exitCase(file, { expectLinger = false } = {}) {
  return {
    group: 'exit',
    label: `exit/${file}`,
    async run(dir) {
      const r = await runNode([path.join('exit', file)], {
        cwd: dir,
        timeout: expectLinger ? EXIT_LIMIT_MS : EXIT_KILL_MS,
        marker: 'FLOWS SETTLED',
      });
      const settledLine = r.out.split('\n').find((l) => l.startsWith('FLOWS SETTLED')) ?? '';
      const wall = r.killed ? `> ${(expectLinger ? EXIT_LIMIT_MS : EXIT_KILL_MS) / 1000} s (killed)` : `${Math.round(r.wallMs)} ms`;
      const linger = Number.isNaN(r.lingerMs) ? 'n/a' : `${Math.round(r.lingerMs)} ms`;
      const figures = `wall time ${wall}, alive ${linger} after its flows settled`;
      if (expectLinger) {
        const caught = r.killed && settledLine !== '';
        return {
          ok: caught,
          name: `harness self-check: a leftover 1-hour timer is caught (${file})`,
          detail: caught ? `${figures}: caught` : `NOT caught: ${figures}, exit ${r.code}`,
          out: r.out,
        };
      }
      const ok = !r.killed && r.code === 0 && settledLine !== '' && r.wallMs <= EXIT_LIMIT_MS;
      return {
        ok,
        name: `process exits after flows settle (${file})`,
        detail: `${figures}${ok ? '' : `, exit ${r.code}; limit ${EXIT_LIMIT_MS} ms`}`,
        out: r.out,
      };
    },
  };
}

const CASES = [
  gcCase('short-lived', 'short-lived.mjs'),
  gcCase('collected', 'collected.mjs'),
  gcCase('executions', 'executions.mjs', 'fail-once'),
  gcCase('retryers', 'retryers.mjs', 'finalizer'),
  gcCase('retryers', 'retryers.mjs', 'dispose'),
  gcCase('retryers', 'retryers.mjs', 'crowd'),
  gcCase('executions', 'executions.mjs', 'success'),
  gcCase('flows', 'flows.mjs'),
  gcCase('settled', 'settled.mjs'),
  gcCase('signal', 'signal.mjs'),
  gcCase('signal', 'caller-signal.mjs'),
  gcCase('origins', 'origins.mjs'),
  exitCase('baseline.mjs'),
  exitCase('deadlines.mjs'),
  exitCase('signal-budget.mjs'),
  exitCase('aborted.mjs'),
  exitCase('hedged.mjs'),
  exitCase('breaker.mjs'),
  exitCase('control.mjs', { expectLinger: true }),
].filter((c) => !only || only.has(c.group));

export async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'cases'), path.join(consumer, 'leaks'));
  console.log(`leak cases in ${path.relative(process.cwd(), dir) || dir}, ${CONCURRENCY} at a time`);
  const t0 = performance.now();
  const results = [];
  let next = 0;
  async function worker() {
    while (next < CASES.length) {
      const c = CASES[next++];
      const s = performance.now();
      let r;
      try {
        r = await c.run(dir);
      } catch (e) {
        r = { ok: false, name: c.label, detail: String(e?.stack ?? e), out: '' };
      }
      const secs = ((performance.now() - s) / 1000).toFixed(1);
      console.log(`${r.ok ? 'PASS' : 'FAIL'}  ${r.name} [${c.label}, ${secs}s]\n      ${r.detail}`);
      if (r.out.trim()) console.log(indent(r.out));
      results.push(r);
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const failed = results.filter((r) => !r.ok).length;
  console.log(`\nleaks: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`${results.length - failed} passed, ${failed} failed`);
  return failed === 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ok = await main().catch((e) => {
    console.error(e?.stack ?? e);
    return false;
  });
  process.exit(ok ? 0 : 1);
}
