// What the stage runners under tests/ (runtimes, cjs, workerd, bundlers,
// types) share: one report format, so `npm test`'s output reads the same
// from stage to stage, and how a runner's main becomes the process's exit
// code; and the child process a case runs in (the leak stage's too). What
// "CI" means is decided here alone, for the runners and scripts/test.mjs.
import { spawn } from 'node:child_process';

/** How long one case's child process may take before it is killed. */
export const TIMEOUT_MS = 60_000;

/**
 * Whether this is a CI run: `CI` is `1`, `true` or `yes` (any case). Under
 * CI nothing may be skipped: a missing browser or stage file fails.
 */
export const isCI = () => /^(1|true|yes)$/i.test(process.env.CI ?? '');

/**
 * The exit code of a stage runner that left out checks it was asked for
 * (outside CI only, e.g. no Chromium): scripts/test.mjs shows the stage as
 * SKIP, not PASS. 77, as automake's test harness reads it.
 */
export const SKIP_EXIT = 77;

/** What a runner's `main` resolves to when it skipped checks and nothing failed. */
export const SKIPPED = Symbol('skipped');

/**
 * Prints one line a result (`PASS`, `FAIL` or `SKIP`, the label, the time
 * when the result has `ms`, the detail cut to `cut` characters on a pass,
 * the whole detail indented under a failure) and the stage's count line.
 * A result is `{ label, ok, detail, ms?, skipped? }`. True when nothing
 * failed and something ran.
 */
export function report(stage, results, { width = 24, cut = 600 } = {}) {
  let failed = 0;
  for (const r of results) {
    if (!r.ok) failed++;
    const tag = r.skipped ? 'SKIP' : r.ok ? 'PASS' : 'FAIL';
    const secs = r.ms === undefined ? '' : ` ${(r.ms / 1000).toFixed(1).padStart(5)}s `;
    console.log(`${tag}  ${r.label.padEnd(width)}${secs} ${r.ok ? r.detail.slice(0, cut) : ''}`);
    if (!r.ok) console.log(r.detail.replace(/^/gm, '      '));
  }
  const passed = results.filter((r) => r.ok && !r.skipped).length;
  const skipped = results.length - passed - failed;
  console.log(`${stage}: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  return failed === 0 && results.length > 0;
}

/**
 * Runs a stage's `main` as the process: exit 0 when it resolves true, 1
 * when false or when it throws (the stack printed); SKIP_EXIT when it
 * resolves SKIPPED, except under CI, where a skip is a failure (1).
 */
export function runStage(main) {
  main().then(
    (ok) => process.exit(ok === SKIPPED ? (isCI() ? 1 : SKIP_EXIT) : ok ? 0 : 1),
    (e) => {
      console.error(e?.stack ?? e);
      process.exit(1);
    },
  );
}

/**
 * Runs `cmd args` in `cwd` with `env` added to this process's environment,
 * killed after `timeout` ms (default TIMEOUT_MS); resolves `{ code, out,
 * wallMs, lingerMs, killed }`: the exit code (or signal), stdout and stderr
 * together, how long it ran, and how long it lived after `marker` first
 * appeared on stdout (NaN without one): a runtime kept alive by something
 * the package left behind shows there.
 */
export function runProcess(cmd, args, { cwd, env, marker, timeout = TIMEOUT_MS } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let markedAt = null;
    let killed = false;
    child.stdout.on('data', (d) => {
      out += d;
      if (marker && markedAt === null && out.includes(marker)) markedAt = performance.now();
    });
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      killed = true;
      out += `\n(timed out after ${timeout} ms)`;
      child.kill('SIGKILL');
    }, timeout);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, out: `${out}\n${e.message}`, wallMs: performance.now() - t0, lingerMs: NaN, killed });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const end = performance.now();
      resolve({ code: code ?? signal, out, wallMs: end - t0, lingerMs: markedAt === null ? NaN : end - markedAt, killed });
    });
  });
}

/** The first line of `text` that starts with `prefix`, or ''. */
export const firstLine = (text, prefix) => text.split('\n').find((l) => l.startsWith(prefix)) ?? '';
