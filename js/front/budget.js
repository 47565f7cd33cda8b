// RetryBudget: a token bucket shared by retryers. The engine keeps and
// decides everything; this class only names it.
import { engine } from './engine.js';
import { BUDGET_IDS, classify, show } from './values.js';

const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((id) => engine.budget_free(id))
  : null;

/**
 * A retry budget shared by any number of retryers (gRPC retry throttling):
 * each failed attempt costs 1 token, each success refunds `tokenRatio`, and
 * retries happen only while more than `maxTokens / 2` tokens remain.
 */
export class RetryBudget {
  #id;
  #max;
  #ratio;

  /**
   * @param {{ maxTokens?: number, tokenRatio?: number }} [options]
   *   `maxTokens` (default 10) and `tokenRatio` (default 0.1), both finite and > 0.
   */
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`retry-wasm: RetryBudget options must be an object; got ${show(options)}`);
    }
    let keys;
    try {
      keys = Object.keys(options);
    } catch (e) {
      throw new TypeError(`retry-wasm: RetryBudget options could not be read: ${show(e)}`);
    }
    const read = {};
    for (const key of keys) {
      if (key !== 'maxTokens' && key !== 'tokenRatio') {
        throw new TypeError(`retry-wasm: unknown RetryBudget option '${key}'`);
      }
      try {
        read[key] = options[key];
      } catch (e) {
        throw new TypeError(`retry-wasm: RetryBudget option '${key}' could not be read: ${show(e)}`);
      }
    }
    const { maxTokens, tokenRatio } = read;
    const [mt, mv] = classify(maxTokens);
    const [rt, rv] = classify(tokenRatio);
    const id = engine.budget_new(mt, mv, rt, rv);
    if (id < 0) {
      const name = id >= -2 ? 'maxTokens' : 'tokenRatio';
      const value = id >= -2 ? maxTokens : tokenRatio;
      const Ctor = id === -2 || id === -4 ? RangeError : TypeError;
      throw new Ctor(`retry-wasm: RetryBudget option '${name}' must be a finite number > 0; got ${show(value)}`);
    }
    this.#id = id;
    this.#max = maxTokens ?? 10;
    this.#ratio = tokenRatio ?? 0.1;
    BUDGET_IDS.set(this, id);
    registry?.register(this, id);
  }

  /** Tokens left now, from 0 to `maxTokens`. */
  get tokens() {
    return engine.budget_tokens(this.#id);
  }

  /** The configured maximum (default 10). */
  get maxTokens() {
    return this.#max;
  }

  /** Tokens refunded per success (default 0.1). */
  get tokenRatio() {
    return this.#ratio;
  }
}
