// One adapter per SDK: how to make a client with a given `fetch` against a
// base URL (the SDK's own retries off), the calls the cases make, and how
// the SDK reports an outcome, normalised to
//
//   { kind: 'ok', value }              the call resolved
//   { kind: 'status', status, error, text }
//                                      the SDK's HTTP error: the response's
//                                      status, and what the SDK shows of its
//                                      body (to tell the server's real answer)
//   { kind: 'abort', error }           the SDK's abort error
//   { kind: 'timeout', error }         the SDK's own timeout error
//   { kind: 'network', error }         the SDK's connection error
//   { kind: 'other', error }           anything else (always a failure)
//
// Call options `o`: { signal?, headers?, timeout? } (timeout in ms: the
// SDK's own per-call or per-client timeout). `headers` values of null mean
// "remove the SDK's own header of that name" where the SDK allows it.
//
// What each SDK hands to `fetch` (read from its code, checked by the cases):
//   openai 6 / Anthropic 1: fetch(url string, init) with init.signal its own
//     controller's (the caller's signal and its timeout abort it), a
//     ReadableStream body for every streaming body (async iterables and Node
//     Readables are converted) with duplex 'half'; FormData for uploads.
//     Neither adds an Idempotency-Key by itself (openai's client has the
//     code for it, `stainless-node-retry-<uuid>`, but 6.49.0 leaves its
//     `idempotencyHeader` unset). Both call fetch('data:,') once per fetch
//     function before the first upload (a FormData support probe).
//   Octokit (@octokit/request 10): fetch(url string, init), init.body passed
//     through as given (JSON bodies as strings), duplex 'half' whenever there
//     is a body, the caller's `request.signal` as init.signal; no timeout.
//   postgrest-js 2: fetch(url string, init), body a JSON string, the caller's
//     abortSignal() as init.signal; its `timeout` option wraps fetch in a
//     controller of its own. Its own retries (on by default) are turned off.
//   ky 1: fetch(request, {}) with a Request whose body is whatever was given
//     (duplex 'half') and whose signal combines the caller's signal and ky's
//     timeout controller: everything is inside the Request.
import { Readable } from 'node:stream';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic, { toFile as anthropicToFile } from '@anthropic-ai/sdk';
import { Octokit } from '@octokit/rest';
import { PostgrestClient } from '@supabase/postgrest-js';
import ky, { HTTPError as KyHTTPError, TimeoutError as KyTimeoutError } from 'ky';
import OpenAI, { toFile as openaiToFile } from 'openai';

/** The version of package `name` as Node finds it from `dir` (walking up node_modules). */
function version(name, dir = path.dirname(fileURLToPath(import.meta.url))) {
  for (let d = dir; ; d = path.dirname(d)) {
    const file = path.join(d, 'node_modules', name, 'package.json');
    if (fs.existsSync(file)) return { version: JSON.parse(fs.readFileSync(file, 'utf8')).version, dir: path.dirname(file) };
    if (path.dirname(d) === d) return { version: '?', dir: null };
  }
}
const v = (name) => version(name).version;

/** `o` without its undefined fields (openai validates `timeout` when the key is there at all). */
const defined = (o) => Object.fromEntries(Object.entries(o).filter(([, value]) => value !== undefined));
const without = (headers, drop) => Object.fromEntries(Object.entries(headers ?? {}).filter(([, value]) => value !== drop));

/** Stainless-generated clients (openai, Anthropic) share their error classes' shape. */
function stainlessClassify(SDK) {
  return (e) => {
    if (e instanceof SDK.APIUserAbortError) return { kind: 'abort', error: e };
    if (e instanceof SDK.APIConnectionTimeoutError) return { kind: 'timeout', error: e };
    if (e instanceof SDK.APIConnectionError) return { kind: 'network', error: e };
    if (e instanceof SDK.APIError && typeof e.status === 'number') return { kind: 'status', status: e.status, error: e, text: e.message };
    return { kind: 'other', error: e };
  };
}

const OK_JSON = { ok: true };

export const openai = {
  name: 'openai',
  version: v('openai'),
  make: (base, fetch) => new OpenAI({ apiKey: 'sk-test', baseURL: `${base}/v1`, fetch, maxRetries: 0, logLevel: 'off' }),
  get: {
    ok: { status: 200, json: { id: 'm1', object: 'model', created: 0, owned_by: 'test' } },
    call: (c, o) => c.models.retrieve('m1', defined({ signal: o.signal, timeout: o.timeout, headers: o.headers })),
    check: (v) => v?.id === 'm1',
  },
  post: {
    ok: { status: 200, json: { id: 'chatcmpl-1', object: 'chat.completion', created: 0, model: 'm1', choices: [] } },
    call: (c, o) =>
      c.chat.completions.create(
        { model: 'm1', messages: [{ role: 'user', content: 'hi' }] },
        defined({ signal: o.signal, timeout: o.timeout, headers: o.headers }),
      ),
    check: (v) => v?.id === 'chatcmpl-1',
  },
  /**
   * Headers that make a POST carry no Idempotency-Key: openai's client can
   * add one of its own to non-GET requests (its `idempotencyHeader`, unset
   * in 6.49.0, so today it adds none); null removes it either way.
   */
  noKey: { 'Idempotency-Key': null },
  timeout: { kind: 'timeout' },
  upload: {
    ok: { status: 200, json: { id: 'file-1', object: 'file', bytes: 0, created_at: 0, filename: 'data.jsonl', purpose: 'batch' } },
    call: async (c, bytes, o) =>
      c.files.create({ file: await openaiToFile(bytes, 'data.jsonl'), purpose: 'batch' }, defined({ headers: o.headers, signal: o.signal })),
  },
  /** bytes | stream | node-readable | async-gen: how the body reaches fetch, and the call. */
  raw: {
    kinds: ['bytes', 'stream', 'node-readable', 'async-gen'],
    replays: (kind) => kind === 'bytes',
    call: (c, body, o) =>
      c.post('/raw', defined({ body, headers: { 'Content-Type': 'application/octet-stream', ...o.headers }, signal: o.signal })),
  },
  /** A streamed answer (server-sent events): the call, and its events as an async iterator. */
  sse: {
    ok: sse(
      [0, 1, 2].map((i) => ({ data: { id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'm1', choices: [{ index: 0, delta: { content: `t${i}` }, finish_reason: null }] } })),
    ),
    open: async (c, o) =>
      (await c.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], stream: true }, { signal: o.signal }))[Symbol.asyncIterator](),
    // The caller's abort ends the iteration quietly (its Stream returns on an AbortError).
    afterAbort: 'end',
  },
  classify: stainlessClassify(OpenAI),
};

export const anthropic = {
  name: 'anthropic',
  version: v('@anthropic-ai/sdk'),
  make: (base, fetch) => new Anthropic({ apiKey: 'sk-ant-test', baseURL: base, fetch, maxRetries: 0, logLevel: 'off' }),
  get: {
    ok: { status: 200, json: { id: 'm1', type: 'model', display_name: 'M1', created_at: '2026-01-01T00:00:00Z' } },
    call: (c, o) => c.models.retrieve('m1', {}, defined({ signal: o.signal, timeout: o.timeout, headers: o.headers })),
    check: (v) => v?.id === 'm1',
  },
  post: {
    ok: {
      status: 200,
      json: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm1', content: [], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } },
    },
    call: (c, o) =>
      c.messages.create(
        { model: 'm1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
        defined({ signal: o.signal, timeout: o.timeout, headers: o.headers }),
      ),
    check: (v) => v?.id === 'msg_1',
  },
  noKey: {},
  timeout: { kind: 'timeout' },
  upload: {
    ok: { status: 200, json: { id: 'file_1', type: 'file', filename: 'data.bin', mime_type: 'application/octet-stream', size_bytes: 0, created_at: '2026-01-01T00:00:00Z' } },
    call: async (c, bytes, o) =>
      c.beta.files.upload({ file: await anthropicToFile(bytes, 'data.bin') }, defined({ headers: o.headers, signal: o.signal })),
  },
  raw: {
    kinds: ['bytes', 'stream', 'node-readable', 'async-gen'],
    replays: (kind) => kind === 'bytes',
    call: (c, body, o) =>
      c.post('/v1/raw', defined({ body, headers: { 'Content-Type': 'application/octet-stream', ...o.headers }, signal: o.signal })),
  },
  sse: {
    ok: sse([
      { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm1', content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 0 } } } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 't' } } },
    ]),
    open: async (c, o) =>
      (await c.messages.create({ model: 'm1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], stream: true }, { signal: o.signal }))[Symbol.asyncIterator](),
    afterAbort: 'end',
  },
  classify: stainlessClassify(Anthropic),
};

const octokitLog = { debug() {}, info() {}, warn() {}, error() {} };

export const octokit = {
  name: 'octokit',
  version: `${v('@octokit/rest')} (@octokit/request ${version('@octokit/request', version('@octokit/core').dir).version})`,
  make: (base, fetch) => new Octokit({ baseUrl: base, auth: 'ghp_test', request: { fetch }, log: octokitLog }),
  get: {
    ok: { status: 200, json: { id: 1, name: 'r', full_name: 'o/r' } },
    call: (c, o) => c.rest.repos.get({ owner: 'o', repo: 'r', headers: o.headers, request: { signal: o.signal } }),
    check: (v) => v?.data?.full_name === 'o/r',
  },
  post: {
    ok: { status: 201, json: { id: 7, number: 7, title: 't' } },
    call: (c, o) => c.rest.issues.create({ owner: 'o', repo: 'r', title: 't', headers: without(o.headers, null), request: { signal: o.signal } }),
    check: (v) => v?.data?.number === 7,
  },
  noKey: {},
  timeout: null, // @octokit/request 10 has no timeout option
  upload: null, // Octokit sets a JSON content-type on every body; GitHub takes no multipart
  raw: {
    kinds: ['bytes', 'stream', 'node-readable', 'async-gen'],
    replays: (kind) => kind === 'bytes',
    call: (c, body, o) =>
      c.request('POST /raw', { data: body, headers: { 'content-type': 'application/octet-stream', ...o.headers }, request: { signal: o.signal } }),
  },
  classify(e) {
    if (e?.name === 'AbortError') return { kind: 'abort', error: e };
    if (e?.name === 'HttpError' && typeof e.status === 'number' && e.response) return { kind: 'status', status: e.status, error: e, text: e.message };
    if (e?.name === 'HttpError' && !e.response && e.cause instanceof TypeError) return { kind: 'network', error: e };
    return { kind: 'other', error: e };
  },
};

export const postgrest = {
  name: 'postgrest',
  version: v('@supabase/postgrest-js'),
  make: (base, fetch, { timeout } = {}) => new PostgrestClient(base, { fetch, retry: false, timeout }),
  clientTimeout: true,
  get: {
    ok: { status: 200, json: [{ id: 1, name: 'a' }] },
    call: (c, o) => withHeaders(c.from('items').select('*'), o),
    check: (v) => Array.isArray(v?.data) && v.data[0]?.id === 1,
  },
  post: {
    ok: { status: 201, body: '' },
    call: (c, o) => withHeaders(c.from('items').insert({ name: 'b' }), o),
    check: (v) => v?.status === 201,
  },
  noKey: {},
  timeout: { kind: 'abort' }, // its timeout is an AbortError it reports as "aborted (timeout or manual cancellation)"
  upload: null,
  raw: null, // every body is JSON.stringify of a value
  /** postgrest-js resolves with { data, error, status } unless told to throw. */
  settle(value) {
    if (!value?.error) return { kind: 'ok', value };
    if (value.status === 0) {
      if (/^AbortError\b/.test(value.error.message)) return { kind: 'abort', error: value.error };
      if (/^TypeError\b/.test(value.error.message)) return { kind: 'network', error: value.error };
      return { kind: 'other', error: value.error };
    }
    return { kind: 'status', status: value.status, error: value.error, text: value.error.message };
  },
  classify: (e) => ({ kind: 'other', error: e }),
};

function withHeaders(builder, o) {
  let b = builder;
  for (const [name, value] of Object.entries(o.headers ?? {})) if (value !== null) b = b.setHeader(name, value);
  if (o.signal) b = b.abortSignal(o.signal);
  return b;
}

export const kyAdapter = {
  name: 'ky',
  version: v('ky'),
  make: (base, fetch, { timeout } = {}) => ky.create({ prefixUrl: base, fetch, retry: 0, timeout: timeout ?? 10_000 }),
  clientTimeout: true,
  get: {
    ok: { status: 200, json: { id: 1, name: 'a' } },
    call: (c, o) => c.get('items', { signal: o.signal, headers: without(o.headers, null) }).json(),
    check: (v) => v?.id === 1,
  },
  post: {
    ok: { status: 201, json: { id: 2 } },
    call: (c, o) => c.post('items', { json: { name: 'b' }, signal: o.signal, headers: without(o.headers, null) }).json(),
    check: (v) => v?.id === 2,
  },
  noKey: {},
  timeout: { kind: 'timeout' },
  upload: {
    ok: { status: 201, json: { id: 3 } },
    call: (c, bytes, o) => {
      const form = new FormData();
      form.append('purpose', 'test');
      form.append('file', new File([bytes], 'data.bin', { type: 'application/octet-stream' }));
      return c.post('upload', { body: form, signal: o.signal, headers: without(o.headers, null) }).json();
    },
  },
  sse: {
    ok: sse([0, 1, 2].map((i) => ({ data: { n: i } }))),
    // The response body's chunks, read as they come.
    open: async (c, o) => {
      const response = await c.get('events', { signal: o.signal, timeout: false });
      const reader = response.body.getReader();
      return { next: () => reader.read() };
    },
    // The body errors with the caller's abort reason, as fetch's does.
    afterAbort: 'abort',
  },
  raw: {
    kinds: ['bytes', 'stream', 'node-readable', 'async-gen'],
    // ky puts every body in a Request and calls fetch(request): SPEC §2b
    // clones a Request input for each attempt, whatever its body's source.
    replays: () => true,
    call: (c, body, o) =>
      c.post('raw', { body, signal: o.signal, headers: { 'content-type': 'application/octet-stream', ...without(o.headers, null) } }).json(),
  },
  async classify(e) {
    if (e instanceof KyHTTPError) return { kind: 'status', status: e.response.status, error: e, text: await e.response.text().catch((x) => `(body unreadable: ${x})`) };
    if (e instanceof KyTimeoutError) return { kind: 'timeout', error: e };
    if (e?.name === 'AbortError') return { kind: 'abort', error: e };
    if (e instanceof TypeError && e.message === 'fetch failed') return { kind: 'network', error: e };
    return { kind: 'other', error: e };
  },
};

/** A server-sent-events answer of `events` ({ event?, data }), one chunk each, held open after them. */
function sse(events) {
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
    chunks: events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`),
  };
}

export const ADAPTERS = [openai, anthropic, octokit, postgrest, kyAdapter];

/** A body of `kind` carrying `chunks` (Uint8Arrays), fresh for each call. */
export function makeBody(kind, chunks) {
  switch (kind) {
    case 'bytes': {
      const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const c of chunks) {
        all.set(c, at);
        at += c.length;
      }
      return all;
    }
    case 'stream': {
      let i = 0;
      return new ReadableStream({
        async pull(controller) {
          await new Promise((r) => setImmediate(r));
          if (i < chunks.length) controller.enqueue(chunks[i++]);
          else controller.close();
        },
      });
    }
    case 'node-readable':
      return Readable.from(chunks.map((c) => Buffer.from(c)), { objectMode: false });
    case 'async-gen':
      return (async function* body() {
        for (const c of chunks) {
          await new Promise((r) => setImmediate(r));
          yield c;
        }
      })();
    default:
      throw new Error(`unknown body kind ${kind}`);
  }
}
