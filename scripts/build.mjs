#!/usr/bin/env node
// Builds the package's generated half, twice from the one crate (SPEC §0
// "Entries and builds"): the lean engine (no cargo features: everything
// but retryFetch) for `retry-wasm` in browsers, and the full engine
// (`--features fetch`) for `retry-wasm/fetch` and every server runtime.
// Each goes Rust -> wasm32 -> wasm-bindgen (the `web` target's glue and
// module) -> wasm-opt -> pkg/<build>/:
//   pkg/<build>/retry_wasm.js    the glue wasm-bindgen generated, its
//                                names shortened (see shortenNames)
//   pkg/<build>/snippets/        the crate's inline_js helpers it imports
//   pkg/<build>/wasm-bytes.js    the optimised module, deflated and
//                                embedded as base64, so every bundler
//                                loads it with no file lookup; the browser
//                                entry inflates it with the standard
//                                DecompressionStream and instantiates it
//                                before its exports are used, so users
//                                call no init function
//   pkg/<build>/retry_wasm.wasm  the same module as a file: what the
//                                workerd entry imports (full; Cloudflare's
//                                bundlers hand it over as a compiled
//                                WebAssembly.Module), and for size reports
//   pkg/full/wasm-raw.cjs        the full module as base64, for Node
//   pkg/engine.cjs               the one engine of Node, Deno, Bun and
//                                Jest: js/node.cjs bundled by esbuild with
//                                the doorway and the full glue (see
//                                cjsEntry); pkg/index.d.cts and
//                                pkg/fetch.d.cts the types of `require`
//
//   node scripts/build.mjs             always build
//   node scripts/build.mjs --if-needed skip when sources are unchanged
//
// It installs what a fresh machine lacks: the wasm32 target (rustup) and
// wasm-bindgen-cli at exactly the version Cargo.lock pins the wasm-bindgen
// crate to (the two must match).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { deflateRawSync, constants as zlib } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { ensureDependencies } from './deps.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(root, 'pkg');
const stampFile = join(pkg, '.stamp');
// Cargo puts its output under CARGO_TARGET_DIR when that is set.
const target = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(root, 'target');
const cargoOut = join(target, 'wasm32-unknown-unknown/release/retry_wasm.wasm');

/** The two builds: which cargo features each has, and what it is for. */
export const BUILDS = [
  { name: 'lean', features: [], what: "retry-wasm in browsers: everything but retryFetch" },
  { name: 'full', features: ['fetch'], what: 'retry-wasm/fetch in browsers, and every entry in Node, Deno, Bun and workerd' },
];

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  }
}

function output(cmd, args) {
  try {
    return execFileSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

function sourceFiles(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sourceFiles(p, out);
    else out.push(p);
  }
  return out;
}

/** Hash of everything the build output depends on. */
function sourceHash() {
  const h = createHash('sha256');
  const files = [
    ...sourceFiles(join(root, 'src')).sort(),
    join(root, 'Cargo.toml'),
    join(root, 'Cargo.lock'),
    join(root, '.cargo/config.toml'),
    fileURLToPath(import.meta.url),
  ];
  for (const f of files) {
    if (!existsSync(f)) continue;
    h.update(f.slice(root.length));
    h.update(readFileSync(f));
  }
  return h.digest('hex');
}

/** The wasm-bindgen version Cargo.lock resolved (pinned with `=` in Cargo.toml). */
export function pinnedBindgenVersion() {
  const lock = readFileSync(join(root, 'Cargo.lock'), 'utf8');
  const m = /\[\[package\]\]\nname = "wasm-bindgen"\nversion = "([^"]+)"/.exec(lock);
  if (!m) throw new Error('Cargo.lock names no wasm-bindgen version');
  return m[1];
}

/** The wasm-bindgen CLI to run: the one on PATH if it is the pinned version, else installed. */
function ensureBindgen() {
  const want = pinnedBindgenVersion();
  const have = output('wasm-bindgen', ['--version']).trim();
  if (have === `wasm-bindgen ${want}`) return 'wasm-bindgen';
  console.log(`[build] installing wasm-bindgen-cli ${want} (found: ${have || 'none'}); this takes a few minutes`);
  // Not --locked: the CLI's lock file names a crate this registry does not serve.
  run('cargo', ['install', 'wasm-bindgen-cli', '--version', `=${want}`]);
  const home = process.env.CARGO_HOME || join(process.env.HOME || '', '.cargo');
  const installed = join(home, 'bin', 'wasm-bindgen');
  return existsSync(installed) ? installed : 'wasm-bindgen';
}

function ensureTarget() {
  if (!output('rustup', ['target', 'list', '--installed']).split('\n').includes('wasm32-unknown-unknown')) {
    console.log('[build] adding the wasm32-unknown-unknown target');
    run('rustup', ['target', 'add', 'wasm32-unknown-unknown']);
  }
}

/**
 * What wasm-opt is told: -Oz twice (the second pass finds what the first
 * one's inlining opened up), plus the facts rustc's output meets
 * (`--low-memory-unused`: nothing addresses the first KiB, so constant
 * offsets may fold into loads and stores), and no target-features section
 * (no host reads it). Not `--ignore-implicit-traps`: it lets a guarded load
 * run unguarded, and a trap poisons the instance for every retryer on the
 * page.
 */
const WASM_OPT_FLAGS = ['-Oz', '-Oz', '--low-memory-unused', '--strip-debug', '--strip-producers', '--strip-target-features'];

/**
 * Short names (see `shortenNames`): wasm-opt renames every import, export
 * and import module to one or two letters and prints the mapping, which
 * `shortenNames` then applies to the glue.
 */
const MINIFY_FLAG = '--minify-imports-and-exports-and-modules';

/**
 * The one rewrite of generated output: wasm-bindgen names the module's
 * imports after a hash (`__wbg_now_463ac581d2fc7ea3`, ~120 of them) and its
 * exports after their Rust paths, and every name is written twice, in the
 * module and in the glue; gzip cannot fold hashes, so they cost ~4 KB of
 * the download (2026-12-02: 2.6 KB of wasm, 1.7 KB of glue, gzipped).
 * wasm-opt shortens them in the module and prints the mapping; this
 * applies it to the glue, where the names appear only as the keys of the
 * imports object, the import module's name, and `wasm.<export>` reads. It
 * refuses to write a glue where a mapped name was not found, or an old
 * one is left: a glue that does not link would fail at load anyway, and
 * every test stage runs the result.
 */
function shortenNames(glue, mapping) {
  let out = glue;
  const fail = (what) => {
    throw new Error(`shortening names in the glue: ${what}`);
  };
  const modules = new Set(mapping.imports.map(([module]) => module));
  if (modules.size !== 1) fail(`expected one import module, found ${[...modules].join(', ')}`);
  const [module] = modules;
  for (const [, from, to] of mapping.imports) {
    const key = new RegExp(`\\b${from}\\b`, 'g');
    if (!key.test(out)) fail(`import ${from} is not in the glue`);
    out = out.replace(key, to);
  }
  for (const [from, to] of mapping.exports) {
    const read = new RegExp(`\\bwasm\\.${from}\\b`, 'g');
    out = out.replace(read, `wasm.${to}`);
  }
  const quoted = JSON.stringify(module);
  if (!out.includes(quoted)) fail(`the import module ${quoted} is not in the glue`);
  out = out.replaceAll(quoted, JSON.stringify('a'));
  const left = [...mapping.imports.map(([, from]) => from), ...mapping.exports.map(([from]) => `wasm.${from}`)].filter((n) =>
    new RegExp(`\\b${n.replace('.', '\\.')}\\b`).test(out),
  );
  if (left.length) fail(`names left unshortened: ${left.slice(0, 5).join(', ')}`);
  return out;
}

/**
 * Deflates the module for embedding, with Zopfli (the @gfx/zopfli dev
 * dependency: a stream ~5% smaller than zlib's best) when it is installed.
 * Deflating before base64 matters: gzip cannot see through base64, so a
 * base64 text of the raw module downloads ~35% larger than the module.
 */
async function deflate(bytes) {
  try {
    const { default: zopfli } = await import('@gfx/zopfli');
    return Buffer.from(await zopfli.deflateAsync(bytes, { numiterations: 50 }));
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    console.warn('[build] @gfx/zopfli missing (run npm install); deflating with zlib');
    return deflateRawSync(bytes, { level: zlib.Z_BEST_COMPRESSION });
  }
}

function embedded(deflated) {
  return (
    '// Generated by scripts/build.mjs: the retry-wasm engine, deflated and\n' +
    '// embedded so that no runtime or bundler has to locate a .wasm file.\n' +
    `export default ${JSON.stringify(deflated.toString('base64'))};\n`
  );
}

/**
 * The line length esbuild aims at in pkg/engine.cjs (a soft limit: it
 * breaks at the next opportunity after it). An uncaught error shows the
 * line it was thrown from, and the minified entry on one line made that
 * 13.6 KB: `new AsyncRetryer(fn, { timeout: 1 })` uncaught wrote 15 KB to
 * stderr, the message at its end. At 80 the lines are 84 characters at the
 * median and 218 at most (esbuild's own helpers), for 158 more bytes than
 * one line (2026-12-03). The other shipped files need no limit: the glue is
 * wasm-bindgen's own formatting (no line over ~240 characters, none a
 * throw), js/ is not minified, and the base64 line of each wasm-bytes.js
 * and of pkg/full/wasm-raw.cjs is one string literal, exported, where
 * nothing can throw.
 */
const LINE_LIMIT = 80;

/**
 * pkg/engine.cjs, the one engine of the server runtimes. wasm-bindgen's
 * `web` glue is ESM (and Node's require cannot load ESM that has a
 * top-level await, nor Jest's default mode ESM at all), so esbuild
 * rewrites it: it bundles js/node.cjs with what it requires
 * (js/doorway.js, the full glue) into one CommonJS file, turning their
 * `import`/`export` into esbuild's `__esm`/`__toCommonJS` wrappers,
 * minified (the readable glue is pkg/full/retry_wasm.js). Minified,
 * because Node's `import` of a CommonJS file this size, unminified (33 KB),
 * held the process ~20-30 ms idle before it could exit (measured on the
 * 2-core dev machine, 2026-12-02, Node 20.20.2; 13.6 KB minified: none).
 * Outside it stay node:buffer and pkg/full/wasm-raw.cjs, the module as
 * base64, which it requires by a relative path (a bundler for
 * --platform=node follows it). Always rebuilt (it takes ~0.1 s): it also
 * depends on js/.
 */
async function cjsEntry() {
  const esbuild = await import('esbuild');
  const out = join(pkg, 'engine.cjs');
  const result = await esbuild.build({
    entryPoints: [join(root, 'js/node.cjs')],
    outfile: out,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    legalComments: 'none',
    minify: true,
    lineLimit: LINE_LIMIT,
    banner: { js: '// Generated by scripts/build.mjs: js/node.cjs, js/doorway.js and the full build\'s wasm-bindgen glue as one CommonJS file.' },
    plugins: [
      {
        name: 'raw-module-beside',
        setup(b) {
          b.onResolve({ filter: /\/pkg\/full\/wasm-raw\.cjs$/ }, () => ({ path: './full/wasm-raw.cjs', external: true }));
        },
      },
    ],
    metafile: true,
    logLevel: 'silent',
  });
  const externals = Object.values(result.metafile.outputs)
    .flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path))
    .sort();
  const problems = [
    ...result.warnings.map((w) => `esbuild: ${w.text}`),
    ...(externals.join() === './full/wasm-raw.cjs,node:buffer' ? [] : [`it requires ${externals.join(', ')}; only node:buffer and ./full/wasm-raw.cjs may stay outside`]),
  ];
  if (problems.length) throw new Error(`pkg/engine.cjs: ${problems.join('; ')}`);
  // The types of `require`: the same declarations, as CommonJS declaration
  // files, for TypeScript's node16 resolution (a .d.ts in a "type":
  // "module" package is ESM there, and cannot be require()d).
  copyFileSync(join(root, 'js/index.d.ts'), join(pkg, 'index.d.cts'));
  writeFileSync(join(pkg, 'fetch.d.cts'), readFileSync(join(root, 'js/fetch.d.ts'), 'utf8').replaceAll("'./index.js'", "'./index.cjs'"));
  console.log(`[build] pkg/engine.cjs: ${statSync(out).size} bytes`);
}

/** One build: cargo with its features, wasm-bindgen, wasm-opt, then pkg/<name>/. */
async function buildOne(bindgen, { name, features }) {
  const out = join(pkg, name);
  const bindgenOut = join(target, `bindgen-${name}`);
  run('cargo', ['build', '--release', '--target', 'wasm32-unknown-unknown', '--lib', ...(features.length ? ['--features', features.join(',')] : [])]);
  rmSync(bindgenOut, { recursive: true, force: true });
  // --omit-default-module-path: the entry always passes the module, so the
  // glue needs no `new URL('…_bg.wasm', import.meta.url)` fallback, which
  // bundlers would try (and warn they fail) to resolve.
  run(bindgen, ['--target', 'web', '--no-typescript', '--omit-default-module-path', '--out-dir', bindgenOut, cargoOut]);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const bg = join(out, 'retry_wasm.wasm');
  const opt = join(root, 'node_modules/.bin/wasm-opt');
  let glue = readFileSync(join(bindgenOut, 'retry_wasm.js'), 'utf8');
  if (existsSync(opt)) {
    const printed = execFileSync(opt, [join(bindgenOut, 'retry_wasm_bg.wasm'), ...WASM_OPT_FLAGS, MINIFY_FLAG, '-o', bg], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    glue = shortenNames(glue, JSON.parse(printed));
  } else {
    console.warn('[build] node_modules/.bin/wasm-opt missing (run npm install); shipping unoptimised wasm');
    copyFileSync(join(bindgenOut, 'retry_wasm_bg.wasm'), bg);
  }
  writeFileSync(join(out, 'retry_wasm.js'), glue);
  // The glue imports the JavaScript of the crate's `inline_js` helpers from
  // snippets/, beside it.
  if (existsSync(join(bindgenOut, 'snippets'))) cpSync(join(bindgenOut, 'snippets'), join(out, 'snippets'), { recursive: true });
  const bytes = readFileSync(bg);
  writeFileSync(join(out, 'wasm-bytes.js'), embedded(await deflate(bytes)));
  if (name === 'full') {
    writeFileSync(
      join(out, 'wasm-raw.cjs'),
      '// Generated by scripts/build.mjs: the full retry-wasm engine as base64,\n' +
        '// for the CommonJS engine (pkg/engine.cjs), which decodes it with Buffer.\n' +
        `module.exports = ${JSON.stringify(bytes.toString('base64'))};\n`,
    );
  }
  console.log(`[build] pkg/${name}/retry_wasm.wasm: ${bytes.length} bytes`);
}

export async function build({ ifNeeded = false } = {}) {
  // esbuild, binaryen's wasm-opt and Zopfli are dev dependencies: a fresh
  // clone (`npm run demo` there) installs them before anything uses them.
  ensureDependencies();
  const hash = sourceHash();
  const outputs = BUILDS.flatMap(({ name }) => ['retry_wasm.js', 'retry_wasm.wasm', 'wasm-bytes.js'].map((f) => join(pkg, name, f)));
  outputs.push(join(pkg, 'full', 'wasm-raw.cjs'));
  if (ifNeeded && outputs.every(existsSync) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === hash) {
    console.log('[build] wasm up to date');
    await cjsEntry();
    return;
  }
  ensureTarget();
  const bindgen = ensureBindgen();
  // Files of the layout before the two builds would shadow nothing, but
  // would ship: gone.
  for (const f of ['retry_wasm.js', 'retry_wasm.wasm', 'wasm-bytes.js', 'wasm-raw.cjs', 'index.cjs', 'snippets']) rmSync(join(pkg, f), { recursive: true, force: true });
  for (const b of BUILDS) await buildOne(bindgen, b);
  writeFileSync(stampFile, hash);
  await cjsEntry();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    await build({ ifNeeded: process.argv.includes('--if-needed') });
  } catch (e) {
    console.error(`[build] ${e.message}`);
    process.exit(1);
  }
}
