#!/usr/bin/env node
// The otel stage (issue 30, SPEC §2d): the engine's tracing channels and
// `retry-wasm/otel` under the real OpenTelemetry SDK and its undici
// instrumentation, against a local node:http server.
//
// Copies tests/otel/ into .consumer/otel/ so `retry-wasm` and
// `retry-wasm/otel` resolve to the packed tarball installed there
// (@opentelemetry/* come from the repository's dev dependencies, by Node
// walking up), then runs suite.mjs twice, each in its own Node process:
// with the host's node:diagnostics_channel, and with none (as in a
// browser: the otel entry installs its own channels in the engine). Fails
// when a case fails, when a run does not finish, or when its process does
// not exit by itself soon after its last line (a server, socket or timer
// left open). Prints the span tree of a retried retryFetch call.
//
//   node tests/otel/run.mjs
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir } from '../../scripts/consumer.mjs';
import { report, runProcess, runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TIMEOUT_MS = 120_000;
const EXIT_LIMIT_MS = 2_000;

const RUNS = [
  { label: "host's diagnostics_channel", args: [], marker: '\notel: ' },
  { label: 'own channels (as in browsers)', args: ['--fallback'], marker: '\notel (own channels): ' },
];

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(HERE, path.join(consumer, 'otel'), { filter: (p) => path.basename(p) !== 'run.mjs' });
  const lines = [];
  for (const run of RUNS) {
    const r = await runProcess(process.execPath, ['suite.mjs', ...run.args], { cwd: dir, marker: run.marker, timeout: TIMEOUT_MS });
    process.stdout.write(r.out.endsWith('\n') ? r.out : `${r.out}\n`);
    const problems = [];
    if (r.killed) problems.push(`the suite did not finish within ${TIMEOUT_MS / 1000} s`);
    else if (r.code !== 0) problems.push(`the suite exited with ${r.code}`);
    if (!r.out.includes(run.marker)) problems.push('no summary line');
    else if (!(r.lingerMs <= EXIT_LIMIT_MS)) problems.push(`the process lived ${Math.round(r.lingerMs)} ms after its summary (limit ${EXIT_LIMIT_MS} ms): something was left open`);
    const summary = r.out.split('\n').find((l) => l.startsWith(run.marker.trim())) ?? '';
    lines.push({
      label: run.label,
      ok: problems.length === 0,
      detail: problems.length ? problems.join('\n') : `${summary.replace(/^[^:]*: /, '')}; ${(r.wallMs / 1000).toFixed(1)} s, exited ${Math.round(r.lingerMs)} ms after its summary`,
      ms: r.wallMs,
    });
    console.log('');
  }
  return report('otel', lines, { width: 32 });
}

runStage(main);
