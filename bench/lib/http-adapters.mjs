// HTTP clients with retries, for the http case (bench/cases/http-child.mjs).
//
// One policy for all: `attempts` in all (the first included), a constant wait
// of `waitMs` between attempts, no jitter, GET only, retry on 503 only (the
// only failing status the bench server sends). Each adapter maps it onto its
// library's options, checked against the installed sources:
//
//   retry-wasm  retryFetch({ maxAttempts, backoff: 'fixed', baseWait, jitter: 0,
//               methods: ['GET'], statusCodes: [503] }). Resolves with the
//               last Response when retries run out.
//   ky 1.14.3   ky.get(url, { retry: { limit: attempts - 1, methods: ['get'],
//               statusCodes: [503], delay: () => waitMs, backoffLimit: waitMs,
//               jitter: undefined }, timeout: false }). `limit` counts retries
//               (#calculateRetryDelay: retryCount > limit -> throw); `delay`
//               replaces the default 0.3 * 2^(n-1) s; jitter only applies when
//               `true` or a function. `timeout: false`: ky's default arms a
//               10 s timer per attempt (utils/timeout.js), which neither
//               retryFetch nor got do by default. ky throws HTTPError for a
//               503 that is not retried (throwHttpErrors).
//   got 14.6.6  got(url, { retry: { limit: attempts - 1, methods: ['GET'],
//               statusCodes: [503], calculateDelay } }) with calculateDelay =
//               ({ computedValue }) => (computedValue === 0 ? 0 : waitMs).
//               got first computes its own delay (calculate-retry-delay.js:
//               0 when the limit, method or status forbids a retry, else
//               2^(n-1) s + noise) and passes it as `computedValue`; a
//               returned 0 means "do not retry", anything else is the wait.
//               So this keeps got's rules and replaces only the wait. got
//               cannot wait 0 ms (0 cancels the retry), hence waitMs >= 1.
//               got reads the body into `response.body` itself (responseType
//               'text', the default) and throws HTTPError for a non-retried 503.
//   fetch-loop  no library: a hand-written loop over globalThis.fetch (cancel
//               the 503's body, setTimeout(waitMs), again); the floor.
//
// Every adapter's `get(url)` resolves to [status, bodyText] with the body
// read: `await response.text()` for the fetch-based ones, got's
// `response.body` (read and decoded by got before it resolves).
//
// All three libraries and the loop arm a setTimeout for each wait (ky's
// utils/delay.js always; got only for a non-zero delay; retry-wasm only
// for a non-zero wait), so with waitMs = 1 each retry costs every one of
// them one timer of Node's >= 1 ms.

/** 3 attempts in all, a constant 1 ms wait (got cannot wait 0 ms). */
export const POLICY = { attempts: 3, waitMs: 1 };
/** The body of every 200 the bench server sends. */
export const OK_BODY = '{"ok":true,"data":"retry-wasm bench, a small body"}';

/**
 * Requests the server receives for `n` sequential 200s when every third
 * request fails and each failure is retried once (the next request, number
 * 3k + 1, always succeeds): the least r with r - floor(r / 3) = n, e.g.
 * 1,499 for 1,000 (499 retries: request 1,500 would be the next 503).
 */
export function expectedRequests(n) {
  let r = n + Math.floor(n / 2) - 1;
  while (r - Math.floor(r / 3) < n) r++;
  return r;
}

export const HTTP_IDS = ['retry-wasm', 'ky', 'got', 'fetch-loop'];
export const HTTP_PEERS = ['ky', 'got'];

export const HTTP_LABELS = {
  'retry-wasm': 'retry-wasm retryFetch',
  ky: 'ky',
  got: 'got',
  'fetch-loop': 'fetch + hand-written loop (baseline)',
};

/** Resolves to { get(url) -> Promise<[status, body]>, version, probeStatus(e) }. */
export async function makeHttpClient(id, { attempts, waitMs }, retryWasmModule = null) {
  switch (id) {
    case 'retry-wasm': {
      const { retryFetch } = retryWasmModule;
      if (typeof retryFetch !== 'function') throw new Error('retry-wasm does not export retryFetch');
      const f = retryFetch({ maxAttempts: attempts, backoff: 'fixed', baseWait: waitMs, jitter: 0, methods: ['GET'], statusCodes: [503] });
      return {
        async get(url) {
          const res = await f(url);
          return [res.status, await res.text()];
        },
      };
    }
    case 'ky': {
      const { default: ky } = await import('ky');
      const options = {
        retry: { limit: attempts - 1, methods: ['get'], statusCodes: [503], delay: () => waitMs, backoffLimit: waitMs, jitter: undefined },
        timeout: false,
      };
      return {
        async get(url) {
          const res = await ky.get(url, options);
          return [res.status, await res.text()];
        },
      };
    }
    case 'got': {
      if (!(waitMs >= 1)) throw new Error('got cannot retry with a 0 ms wait (a 0 delay cancels the retry)');
      const { default: got } = await import('got');
      const options = {
        retry: {
          limit: attempts - 1,
          methods: ['GET'],
          statusCodes: [503],
          calculateDelay: ({ computedValue }) => (computedValue === 0 ? 0 : waitMs),
        },
      };
      return {
        async get(url) {
          const res = await got(url, options);
          return [res.statusCode, res.body];
        },
      };
    }
    case 'fetch-loop': {
      const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
      return {
        async get(url) {
          for (let attempt = 1; ; attempt++) {
            let res;
            try {
              res = await fetch(url);
            } catch (e) {
              if (attempt >= attempts || !(e instanceof TypeError)) throw e;
              await sleep(waitMs);
              continue;
            }
            if (res.status !== 503 || attempt >= attempts) return [res.status, await res.text()];
            await res.body?.cancel();
            await sleep(waitMs);
          }
        },
      };
    }
    default:
      throw new Error(`unknown http client ${id}`);
  }
}

/** The status of a request that ended in an error (ky's and got's HTTPError), or null. */
export function statusOfError(e) {
  return e?.response?.status ?? e?.response?.statusCode ?? null;
}
