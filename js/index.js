// retry-wasm: retries with backoff, deadlines, Retry-After, retry budgets and
// AbortSignal, decided and carried out by a Rust engine compiled to
// WebAssembly. This is the entry for browsers, workers and bundlers (the
// "default" export condition): the module is embedded deflated, inflated
// with the standard DecompressionStream by a top-level await, and handed to
// the doorway before anything is exported, so importing is all a user does.
// Node's entries (node.cjs, node.js) and workerd's (workerd.js) need no
// top-level await. Types are in index.d.ts.
import base64 from '../pkg/wasm-bytes.js';
import { loadError, needWebAssembly, open } from './doorway.js';

/** The module's bytes: base64, then inflated (the build deflates them). */
async function inflate(text) {
  const raw = atob(text);
  const deflated = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) deflated[i] = raw.charCodeAt(i);
  const stream = new Blob([deflated]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

needWebAssembly();
open(
  await inflate(base64).catch((e) => {
    throw loadError('inflating the embedded module with DecompressionStream failed', e);
  }),
);

export { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, parseRetryAfter, retryFetch, useDiagnosticsChannel } from './doorway.js';
