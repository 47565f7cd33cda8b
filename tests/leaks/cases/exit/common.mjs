// Shared by the exit cases: each runs some flows to their end, then prints
// SETTLED_MARKER with the handles Node still has, and does nothing more.
// ../../run.mjs times how long the process lives after the marker.
export const SETTLED_MARKER = 'FLOWS SETTLED';
export const HOUR = 3_600_000;

export function expect(cond, message) {
  if (!cond) {
    console.error(`exit case broken: ${message}`);
    process.exit(2);
  }
}

/** Prints the marker once the current macrotask queue has drained. */
export async function settled(t0, what) {
  await new Promise((r) => setImmediate(r));
  const resources = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'PipeWrap');
  console.log(`${SETTLED_MARKER} after ${(performance.now() - t0).toFixed(0)} ms: ${what}; active resources: [${resources.join(', ')}]`);
}
