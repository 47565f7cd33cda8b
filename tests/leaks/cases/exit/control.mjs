// Harness self-check, not a library test: a process that leaves a 1-hour
// timer behind must be caught by the exit measurement (../../run.mjs expects
// this one to be killed at the limit).
import { AsyncRetryer } from 'retry-wasm';
import { HOUR, settled } from './common.mjs';

const t0 = performance.now();
await new AsyncRetryer(async () => 1).execute();
setTimeout(() => {}, HOUR);
await settled(t0, 'one success, then a deliberate 1-hour timer');
