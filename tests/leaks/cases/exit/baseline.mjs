// Baseline for the exit cases: import the package, run nothing.
import { AsyncRetryer } from 'retry-wasm';
import { settled } from './common.mjs';

const t0 = performance.now();
new AsyncRetryer(async () => 1);
await settled(t0, 'import + one retryer, no flow');
