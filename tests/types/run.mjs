#!/usr/bin/env node
// Strict type test of the installed package: copies fixtures/ into
// .consumer/types/ and runs `tsc --noEmit` there three times (moduleResolution
// nodenext, bundler, and node16 on a CommonJS file), so the types come from
// .consumer/node_modules/retry-wasm exactly as users get them.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir, ROOT, PACKAGE_NAME } from '../../scripts/consumer.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

export async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'fixtures'), path.join(consumer, 'types'));
  const installedTypes = path.join(consumer, 'node_modules', PACKAGE_NAME) + path.sep;
  let ok = true;
  for (const config of ['tsconfig.json', 'tsconfig.bundler.json', 'tsconfig.cjs.json']) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [TSC, '-p', config, '--listFiles', '--pretty', 'false'], {
      cwd: dir,
      encoding: 'utf8',
    });
    const lines = `${r.stdout}${r.stderr}`.split('\n');
    const diagnostics = lines.filter((l) => /error TS\d+/.test(l) || (l && !l.startsWith('/')));
    const fromPackage = lines.filter((l) => l.startsWith(installedTypes));
    const secs = ((performance.now() - t0) / 1000).toFixed(1);
    if (r.status === 0 && fromPackage.length > 0) {
      console.log(`PASS  tsc -p ${config} (${secs}s; package types: ${fromPackage.map((f) => path.relative(consumer, f)).join(', ')})`);
    } else {
      ok = false;
      console.log(`FAIL  tsc -p ${config} (exit ${r.status ?? r.signal}, ${secs}s)`);
      if (fromPackage.length === 0) console.log(`      no type file was read from ${installedTypes}`);
      for (const d of diagnostics) console.log(`      ${path.isAbsolute(d) ? d : d.replace(/^/, '')}`);
    }
  }
  return ok;
}

if (path.resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  main().then(
    (ok) => process.exit(ok ? 0 : 1),
    (e) => {
      console.error(e?.stack ?? e);
      process.exit(1);
    },
  );
}
