// Runs `node --expose-gc <script> ...args` and parses the last stdout line as JSON.
import { spawn } from 'node:child_process';

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
