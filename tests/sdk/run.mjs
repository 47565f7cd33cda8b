#!/usr/bin/env node
// The SDK stage (issue 28, SPEC §2b and §4): retryFetch as the custom
// `fetch` of real SDKs — openai, @anthropic-ai/sdk, @octokit/rest,
// @supabase/postgrest-js and ky, each with its own retries off — against a
// local flaky server on 127.0.0.1 that records every request.
//
// Copies tests/sdk/ into .consumer/sdk/ so `import 'retry-wasm'` resolves to
// the packed tarball installed there (the SDKs come from the repository's
// node_modules, by Node walking up), runs suite.mjs there in its own Node
// process, and prints one line per case, the count, and a table SDK × case
// (pass / FAIL / n.a.) to paste in a note. Every case runs twice: with
// retryFetch, and with plain fetch as the control (the same SDK call and
// server script; what plain fetch does says whether a failure is the
// test's or the library's). Fails when a case fails, when the suite does
// not finish, or when its process does not exit by itself soon after its
// last line (a server, socket or timer left open).
//
//   node tests/sdk/run.mjs [--sdk openai,ky] [--case get,stream] [--mode retry|plain] [--verbose]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir, ROOT } from '../../scripts/consumer.mjs';
import { report, runProcess, runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TIMEOUT_MS = 150_000;
const EXIT_LIMIT_MS = 2_000;
const MARKER = 'SDK-DONE';
const verbose = process.argv.includes('--verbose');
const passThrough = process.argv.slice(2).filter((a) => a !== '--verbose');

const parse = (out, tag) =>
  out
    .split('\n')
    .filter((l) => l.startsWith(`${tag} `))
    .map((l) => JSON.parse(l.slice(tag.length + 1)));

/** The Markdown table: a row per SDK and mode, a column per case. */
function table(results, caseIds) {
  const rows = [];
  const key = (r) => `${r.sdk}\u0000${r.mode}`;
  const bySdk = new Map();
  for (const r of results) {
    if (!bySdk.has(key(r))) bySdk.set(key(r), { sdk: r.sdk, mode: r.mode, cells: {} });
    bySdk.get(key(r)).cells[r.id] = r.status === 'pass' ? 'pass' : r.status === 'na' ? 'n.a.' : '**FAIL**';
  }
  const ids = caseIds.filter((id) => results.some((r) => r.id === id));
  rows.push(`| SDK | ${ids.join(' | ')} |`);
  rows.push(`|---|${ids.map(() => '---').join('|')}|`);
  for (const { sdk, mode, cells } of bySdk.values()) {
    rows.push(`| ${sdk}${mode === 'plain' ? ' (plain fetch)' : ''} | ${ids.map((id) => cells[id] ?? '').join(' | ')} |`);
  }
  return rows.join('\n');
}

function build() {
  const git = spawnSync('git', ['log', '-1', '--oneline'], { cwd: ROOT, encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src', 'js', 'Cargo.toml', 'Cargo.lock', 'scripts/build.mjs'], { cwd: ROOT, encoding: 'utf8' });
  let tarball = '?';
  try {
    tarball = fs.readFileSync(path.join(ROOT, '.consumer', '.tarball-sha256'), 'utf8').trim().slice(0, 12);
  } catch {}
  const files = (dirty.stdout ?? '').split('\n').filter((l) => l.trim()).map((l) => l.slice(3));
  const changed = files.length ? ` + uncommitted changes to ${files.join(', ')}` : '';
  return `${git.stdout?.trim() || '?'}${changed}; tarball sha256 ${tarball}`;
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(HERE, path.join(consumer, 'sdk'), { filter: (p) => path.basename(p) !== 'run.mjs' });
  const r = await runProcess(process.execPath, ['suite.mjs', ...passThrough], { cwd: dir, marker: MARKER, timeout: TIMEOUT_MS });

  // Whatever the suite printed besides its protocol lines (an SDK's warning, a crash).
  const other = r.out.split('\n').filter((l) => l.trim() && !/^(SDK-RESULT|SDK-INFO|SDK-DONE)\b/.test(l));
  if (other.length) console.log(`suite output:\n${other.map((l) => `  ${l}`).join('\n')}`);

  const infos = parse(r.out, 'SDK-INFO');
  const meta = infos.find((i) => i.versions);
  const results = parse(r.out, 'SDK-RESULT');
  if (meta) {
    console.log(`SDKs: ${Object.entries(meta.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`retry-wasm: ${build()}`);
    if (verbose) for (const c of meta.cases) console.log(`  ${c.id.padEnd(16)} ${c.title}`);
  }
  if (verbose) {
    for (const i of infos.filter((x) => x.sent)) {
      console.log(`${i.sdk} sent ${i.sent} with: ${Object.entries(i.headers).map(([k, v]) => `${k}: ${v}`).join(' | ')}`);
    }
  }

  const lines = results.map((x) => ({
    label: `${x.sdk} ${x.id}${x.mode === 'plain' ? ' (plain fetch)' : ''}`,
    ok: x.status !== 'fail',
    skipped: x.status === 'na',
    detail: x.status === 'na' ? `n.a.: ${x.detail}` : x.detail,
    ms: x.ms,
  }));
  const problems = [];
  if (r.killed) problems.push(`the suite did not finish within ${TIMEOUT_MS / 1000} s`);
  else if (r.code !== 0) problems.push(`the suite exited with ${r.code}`);
  if (!r.out.includes(MARKER)) problems.push(`no ${MARKER} line`);
  else if (!(r.lingerMs <= EXIT_LIMIT_MS)) problems.push(`the process lived ${Math.round(r.lingerMs)} ms after its last line (limit ${EXIT_LIMIT_MS} ms): something was left open`);
  lines.push({
    label: 'suite ran and exited',
    ok: problems.length === 0,
    detail: problems.length ? problems.join('\n') : `${(r.wallMs / 1000).toFixed(1)} s, exited ${Math.round(r.lingerMs)} ms after its last line`,
  });
  const ok = report('sdk', lines, { width: 40, cut: verbose ? 600 : 110 });
  console.log(`\nSDK × case (retryFetch, then plain fetch as the control):\n`);
  console.log(table(results, meta?.cases.map((c) => c.id) ?? [...new Set(results.map((x) => x.id))]));
  // The count again, as the stage's last line (report printed it above the table).
  const failed = lines.filter((l) => !l.ok).length;
  const skipped = lines.filter((l) => l.ok && l.skipped).length;
  console.log(`\nsdk: ${lines.length - failed - skipped} passed, ${failed} failed, ${skipped} skipped (n.a.)${ok ? '' : ' — FAILED'}`);
  return ok;
}

runStage(main);
