// Removes the code and data of panics from the engine's wasm before
// wasm-opt, as the rustwasm tool wasm-snip does with its
// --snip-rust-panicking-code and --snip-rust-fmt-code flags.
//
// The engine's panic handler traps without reading its message (see
// `src/wasm/mod.rs`), and the engine formats nothing itself (no `format!`
// or `write!` in src/), so formatting code can never run. Yet the
// allocation-failure path (`handle_alloc_error`, reached from every `Vec`
// growth) builds a "memory allocation of {n} bytes failed" message, which
// keeps integer formatting, its digit table and the source paths of the
// standard library in the module: ~0.6 KB of the gzipped download (0.8 KB
// of the gzipped wasm alone), for code that only ever ends in a trap.
// Replacing those bodies with `unreachable` keeps that outcome (a trap) and
// lets wasm-opt drop everything only they referenced. The message texts are zeroed so that
// wasm-opt's memory packing drops them from the data section too.
import { readFileSync, writeFileSync } from 'node:fs';

/** Functions that end in a panic, or format one: by mangled-name fragment. */
const SNIPPED = [
  'core9panicking', // panic_fmt, panic_nounwind_fmt, ...
  '4core3fmt', // Formatter, Display for integers
  '5alloc5alloc18handle_alloc_error',
  '5alloc7raw_vec12handle_error',
  '5alloc7raw_vec17capacity_overflow',
];

/** Texts only panic messages use. */
const DEAD_DATA = [
  /\/rustc\/[0-9a-f]{40}\/library\/[\w/]+\.rs/g,
  /memory allocation of |bytes failed|capacity overflow/g,
  /(?:0\d|[1-9]\d){100}/g, // the "00" .. "99" table of integer formatting
];

/**
 * Snips `input` (an unoptimised wasm with its name section) into `output`.
 * Returns the names of the functions replaced, or null when the binaryen
 * package is missing (then `output` is a plain copy).
 */
export async function snip(input, output) {
  const bytes = zeroDeadData(readFileSync(input));
  let binaryen;
  try {
    ({ default: binaryen } = await import('binaryen'));
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    writeFileSync(output, bytes);
    return null;
  }
  // Names are needed to find the functions; wasm-opt strips them later.
  binaryen.setDebugInfo(true);
  const module = binaryen.readBinary(bytes);
  const snipped = [];
  for (let i = 0; i < module.getNumFunctions(); i++) {
    const f = module.getFunctionByIndex(i);
    const { name, module: imported } = binaryen.getFunctionInfo(f);
    if (!imported && SNIPPED.some((s) => name.includes(s))) {
      binaryen.Function.setBody(f, module.unreachable());
      snipped.push(name);
    }
  }
  // The linker exports where static data ends and the heap begins; the
  // front uses neither (the allocator reads them in the module itself).
  for (const name of LINKER_EXPORTS) {
    if (module.getExport(name)) module.removeExport(name);
  }
  writeFileSync(output, module.emitBinary());
  module.dispose();
  return snipped;
}

/** Exports the linker adds that no one outside the module reads (-~25 B gzipped). */
const LINKER_EXPORTS = ['__data_end', '__heap_base'];

/** Zeroes the texts of DEAD_DATA inside the data section (id 11). */
function zeroDeadData(bytes) {
  const b = Buffer.from(bytes);
  let p = 8;
  const leb = () => {
    let r = 0;
    let shift = 0;
    let x;
    do {
      x = b[p++];
      r += (x & 0x7f) * 2 ** shift;
      shift += 7;
    } while (x & 0x80);
    return r;
  };
  while (p < b.length) {
    const id = b[p++];
    const len = leb();
    if (id === 11) {
      const section = b.subarray(p, p + len);
      const text = section.toString('latin1');
      for (const re of DEAD_DATA) {
        for (const m of text.matchAll(re)) section.fill(0, m.index, m.index + m[0].length);
      }
    }
    p += len;
  }
  return b;
}
