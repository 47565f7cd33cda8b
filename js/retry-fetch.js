// `retryFetch` as users call it (the full build's entries only: js/fetch.js,
// js/node.cjs, js/workerd-fetch.js hand it to the doorway's `open`).

/**
 * `fetch` with retries: the engine's call function (options are read and
 * checked here, so bad ones throw synchronously), inside a function that
 * looks and fails like `fetch`: named `fetch`, `length` 1, and a rejection
 * whose stack is retaken where the caller awaits it, so it names the
 * caller's async functions (an error made inside the engine or undici has
 * none of them), as Node's own `fetch` does.
 */
export const fetchOf = (engineFetch) =>
  function retryFetch(options) {
    const call = engineFetch(options);
    // A method keeps its name through minifiers, which drop a function
    // expression's.
    return {
      async fetch(input, init = undefined) {
        try {
          return await call(input, init);
        } catch (error) {
          if (error !== null && typeof error === 'object') {
            try {
              Error.captureStackTrace?.(error);
            } catch {
              // A frozen error keeps the stack it has.
            }
          }
          throw error;
        }
      },
    }.fetch;
  };
