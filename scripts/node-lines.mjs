// The Node lines `npm test` runs its Node stages on, and where their binaries
// come from. Each line is pinned to one version of the npm registry's
// `node-<platform>-<arch>` package (the official binary, packed by the Node
// project); `ensureNode(line)` fetches it with `npm pack` into .node-lines/
// (git ignores it) the first time and returns the binary's path. The line
// the running Node belongs to uses the running binary instead. Nothing is
// downloaded from anywhere but the npm registry, through npm.
//
// A stage runs on another line by running its runner under that line's
// binary: the runners start every child with `process.execPath`, so the
// whole stage (vitest's workers, the SDK suite, Jest, the leak cases, ...)
// then runs on it.
//
// Imports nothing outside Node, so scripts/test.mjs can load it before
// node_modules exists.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Where the fetched binaries live: .node-lines/<version>/node. */
export const CACHE = path.join(ROOT, '.node-lines');

/**
 * The lines tested, oldest first, each with its pinned version. 20 is past
 * its end of life (2026-04-30) but is the machine's and what `engines`
 * still admits; 22 is in maintenance, 24 and 26 are LTS.
 */
export const PINNED = Object.freeze({
  20: '20.20.2',
  22: '22.23.5',
  24: '24.22.3',
  26: '26.10.0',
});

/** Every line, as strings in test order: ['20', '22', '24', '26']. */
export const LINES = Object.freeze(Object.keys(PINNED));

/** The line of the Node running this script (its major version). */
export const HOST_LINE = process.versions.node.split('.')[0];

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const TIMEOUT_MS = 10 * 60_000;

function versionOf(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? r.stdout.trim().replace(/^v/, '') : null;
}

/**
 * The path of a Node binary of `line` ('20', '22', ...): the running one
 * when it is of that line, otherwise the pinned version from .node-lines/,
 * fetched first when missing (`npm pack node-<platform>-<arch>@<version>`,
 * then `package/bin/node` unpacked; npm checks the tarball's integrity
 * against the registry's). Throws an Error saying what failed.
 */
export function ensureNode(line) {
  line = String(line);
  if (line === HOST_LINE) return process.execPath;
  const version = PINNED[line];
  if (!version) throw new Error(`Node ${line} is not a tested line (${LINES.join(', ')})`);
  const dir = path.join(CACHE, version);
  const bin = path.join(dir, process.platform === 'win32' ? 'node.exe' : 'node');
  if (fs.existsSync(bin) && versionOf(bin) === version) return bin;

  const pkg = `node-${process.platform}-${process.arch}@${version}`;
  // A private folder renamed into place at the end: two test runs fetching
  // at once never see half a binary.
  fs.mkdirSync(CACHE, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(CACHE, `.fetch-${version}-`));
  try {
    console.log(`[node-lines] Node ${line}: npm pack ${pkg}`);
    const packed = spawnSync(NPM, ['pack', '--silent', '--pack-destination', tmp, pkg], {
      cwd: tmp,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    if (packed.status !== 0) throw new Error(`npm pack ${pkg}: exit ${packed.status ?? packed.signal ?? packed.error?.message}`);
    const tarball = fs.readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${pkg} left no tarball`);
    const member = process.platform === 'win32' ? 'package/bin/node.exe' : 'package/bin/node';
    const untar = spawnSync('tar', ['-xzf', tarball, member], { cwd: tmp, stdio: 'inherit', timeout: TIMEOUT_MS });
    if (untar.status !== 0) throw new Error(`tar -xzf ${tarball} ${member}: exit ${untar.status ?? untar.signal}`);
    const got = versionOf(path.join(tmp, member));
    if (got !== version) throw new Error(`${pkg}'s ${member} says ${got ?? 'nothing'}, not ${version}`);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.renameSync(path.join(tmp, member), bin);
    console.log(`[node-lines] Node ${line}: ${path.relative(ROOT, bin)} (v${version})`);
    return bin;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * The lines asked for by `--lines 20,26` in argv (all of them without it),
 * in test order. Throws an Error naming an unknown line.
 */
export function parseLines(argv) {
  const i = argv.indexOf('--lines');
  if (i < 0) return [...LINES];
  const asked = (argv[i + 1] ?? '').split(',').filter(Boolean);
  const unknown = asked.filter((l) => !LINES.includes(l));
  if (!asked.length || unknown.length) {
    throw new Error(`--lines needs Node lines from: ${LINES.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`);
  }
  return LINES.filter((l) => asked.includes(l));
}

/**
 * Runs `stage.run({ line, node, host })` once per line of `lines` when
 * `stage.lines` is true (the host's line alone otherwise), every line even
 * after one fails or skips, printing a header per line; `useNode(bin)` is
 * told the binary before each run and the running one after the last.
 * Returns the note for the summary row: the lines it ran on, with each
 * line's seconds. After the last line, a failure on any line is thrown
 * again (of its class), else a skip (`isSkip(error)`) on any line, its
 * message naming the lines that passed, failed and skipped.
 */
export function runOnLines(stage, lines, isSkip, useNode = () => {}) {
  const runLines = stage.lines ? lines : [HOST_LINE];
  const done = [];
  for (const line of runLines) {
    const node = ensureNode(line);
    const shown = node.startsWith(ROOT + path.sep) ? path.relative(ROOT, node) : node;
    if (stage.lines) console.log(`\n── ${stage.name} on Node ${line} (${shown}) ──`);
    const t0 = performance.now();
    useNode(node);
    try {
      const note = stage.run({ line, node, host: line === HOST_LINE });
      done.push({ line, ok: true, note, secs: (performance.now() - t0) / 1000 });
    } catch (e) {
      done.push({ line, ok: false, skipped: isSkip(e), secs: (performance.now() - t0) / 1000, error: e });
    } finally {
      useNode(process.execPath);
    }
  }
  const secs = done.map((d) => `${d.line} ${d.secs.toFixed(1)}s`).join(', ');
  const passed = done.filter((d) => d.ok).map((d) => d.line);
  const extra = done.map((d) => d.note).filter(Boolean).join('; ');
  const failed = done.filter((d) => !d.ok && !d.skipped);
  const skipped = done.filter((d) => d.skipped);
  const bad = failed.length ? failed : skipped;
  if (bad.length) {
    // A crash (a built-in error) keeps its stack; a stage's own Fail or Skip says enough.
    const crash = (e) => !(e instanceof Error) || [Error, TypeError, RangeError, ReferenceError, SyntaxError].includes(e.constructor);
    const why = (e) => (crash(e) ? String(e?.stack ?? e) : e.message);
    const lines = (list) => list.map((d) => d.line).join(' ');
    const message = [
      `on ${lines(done.filter((d) => d.ok)) || '-'}`,
      failed.length ? `failed on ${lines(failed)}` : '',
      skipped.length ? `skipped on ${lines(skipped)}` : '',
    ].filter(Boolean).join('; ') + ` (${secs}): ${bad.map((d) => `[${d.line}] ${why(d.error)}`).join('; ')}`;
    // The same class, so the caller tells a failure of its own from a skip or a crash.
    const first = bad[0].error;
    throw first instanceof Error ? new first.constructor(message) : new Error(message);
  }
  return `on ${passed.join(' ')}  (${secs})${extra ? `  ${extra}` : ''}`;
}
