#!/usr/bin/env node
// Strict type test of the installed package: copies fixtures/ into
// .consumer/types/ and runs `tsc --noEmit` there three times (moduleResolution
// nodenext, bundler, and node16 on a CommonJS file), so the types come from
// .consumer/node_modules/retry-wasm exactly as users get them.
//
// fixtures/pacer.ts is code written against @tanstack/pacer's AsyncRetryer
// with its imports swapped to retry-wasm. Beside its copy, this writes the
// same text with the imports pointed back at @tanstack/pacer (the
// repository's dev dependency), compiled in the same run: a line that does
// not compile against pacer's own declarations fails the test too, so the
// fixture stays an honest sample of pacer code.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir, ROOT, PACKAGE_NAME } from '../../scripts/consumer.mjs';
import { runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const PACER_FIXTURE = 'pacer.ts';
const PACER_VARIANT = 'pacer.against-pacer.ts';
const PACER_TYPES = path.join(ROOT, 'node_modules', '@tanstack', 'pacer', 'dist', 'async-retryer.d.ts');

/** Writes the pacer fixture with its retry-wasm imports pointed at @tanstack/pacer. */
function writePacerVariant(dir) {
  const text = fs.readFileSync(path.join(dir, PACER_FIXTURE), 'utf8');
  const specifier = /(from\s+)(['"])retry-wasm(\/async-retryer)?\2/g;
  const swapped = text.replace(specifier, (_, from, q, sub) => `${from}${q}@tanstack/pacer${sub ?? ''}${q}`);
  if (swapped === text || /['"]retry-wasm(\/[^'"]*)?['"]/.test(swapped)) {
    throw new Error(`${PACER_FIXTURE}: could not point every retry-wasm import at @tanstack/pacer`);
  }
  fs.writeFileSync(path.join(dir, PACER_VARIANT), swapped);
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'fixtures'), path.join(consumer, 'types'));
  writePacerVariant(dir);
  const installedTypes = path.join(consumer, 'node_modules', PACKAGE_NAME) + path.sep;
  let ok = true;
  // The CommonJS config compiles only the .cts fixture, not the pacer one.
  for (const [config, withPacer] of [['tsconfig.json', true], ['tsconfig.bundler.json', true], ['tsconfig.cjs.json', false]]) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [TSC, '-p', config, '--listFiles', '--pretty', 'false'], {
      cwd: dir,
      encoding: 'utf8',
    });
    const lines = `${r.stdout}${r.stderr}`.split('\n');
    const diagnostics = lines.filter((l) => /error TS\d+/.test(l) || (l && !l.startsWith('/')));
    const fromPackage = lines.filter((l) => l.startsWith(installedTypes));
    const readPacer = !withPacer || lines.includes(PACER_TYPES);
    const secs = ((performance.now() - t0) / 1000).toFixed(1);
    if (r.status === 0 && fromPackage.length > 0 && readPacer) {
      console.log(
        `PASS  tsc -p ${config} (${secs}s; package types: ${fromPackage.map((f) => path.relative(consumer, f)).join(', ')}${withPacer ? `; ${PACER_FIXTURE} also against ${path.relative(ROOT, PACER_TYPES)}` : ''})`,
      );
    } else {
      ok = false;
      console.log(`FAIL  tsc -p ${config} (exit ${r.status ?? r.signal}, ${secs}s)`);
      if (fromPackage.length === 0) console.log(`      no type file was read from ${installedTypes}`);
      if (!readPacer) console.log(`      ${PACER_VARIANT} did not read ${PACER_TYPES}`);
      for (const d of diagnostics) console.log(`      ${path.isAbsolute(d) ? d : d.replace(/^/, '')}`);
    }
  }
  return ok;
}

runStage(main);
