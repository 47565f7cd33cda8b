// Both sides of the one-library-per-process cases: the parent runs
// `node --expose-gc <script> ...args` and parses the last stdout line as JSON;
// the child reads its command line and loads the adapters for its library.
import { spawn } from 'node:child_process';
import { peerAdapters, retryWasmAdapters } from './adapters.mjs';
import { emit, opt } from './child-io.mjs';
import { loadRetryWasm } from './retry-wasm.mjs';

export function runNodeChild(script, args, id) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop();
      try {
        resolve(JSON.parse(line));
      } catch {
        resolve({ id, error: `child exited ${code}: ${(err || out).trim().split('\n').slice(-3).join(' | ')}` });
      }
    });
  });
}

/**
 * Child side: `{ id, opt, emit, adapters }` for `<script> <adapterId>
 * [--name=N ...]`. `opt(name, default)` reads a numeric option; `emit` prints
 * one JSON line. Exits with an error line when gc() is not exposed, and with
 * a "not available" line when retry-wasm cannot be loaded.
 */
export async function childSetup() {
  const id = process.argv.slice(2).find((a) => !a.startsWith('--'));
  if (typeof globalThis.gc !== 'function') {
    emit({ id, error: 'run with --expose-gc' });
    process.exit(1);
  }
  let adapters = peerAdapters();
  if (id.startsWith('retry-wasm')) {
    const rw = await loadRetryWasm();
    if (!rw.mod) {
      emit({ id, error: `retry-wasm not available: ${rw.error}` });
      process.exit(0);
    }
    adapters = retryWasmAdapters(rw.mod);
  }
  return { id, opt, emit, adapters };
}
