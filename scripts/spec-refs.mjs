#!/usr/bin/env node
// Every "SPEC §…" citation in the files git tracks must point at something
// docs/SPEC.md has: the section (`SPEC §2c`), the numbered rule inside it
// (`SPEC §1 rule 12`, `rules 1-14`), or the subsection named in quotes
// (`SPEC §2b "A drop-in fetch"`). Several places may follow one "SPEC"
// (`SPEC §1 rule 12, §2c rule 11`, `SPEC §2b and §4`), and a rule number
// may sit on the next line of a wrapped comment. Exits 1 listing
// file:line for each citation that does not resolve.
//
//   node scripts/spec-refs.mjs              check the tree
//   node scripts/spec-refs.mjs --list       also print every citation found
//   node scripts/spec-refs.mjs --self-test  check that known-bad citations are caught

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SPEC_FILE = 'docs/SPEC.md';
const SELF = 'scripts/spec-refs.mjs';

/** Headings and rules are compared without markdown code quotes or case. */
const plain = (s) => s.replace(/`/g, '').replace(/\s+/g, ' ').trim().toLowerCase();

/**
 * Reads the contract's structure: each `## §<id>` section, the numbers of
 * its top-level numbered rules (`1. ` at the start of a line) and its
 * `###` headings. A section or rule number given twice is an error, since
 * a citation of it would be ambiguous.
 */
export function parseSpec(text) {
  const sections = new Map();
  const problems = [];
  let current = null;
  for (const [i, line] of text.split('\n').entries()) {
    const section = /^## §(\d+[a-z]?)\b/.exec(line);
    if (section) {
      if (sections.has(section[1])) problems.push(`${SPEC_FILE}:${i + 1}: §${section[1]} is defined twice`);
      current = { rules: new Set(), headings: [] };
      sections.set(section[1], current);
      continue;
    }
    if (/^## /.test(line)) {
      current = null;
      continue;
    }
    if (!current) continue;
    const rule = /^(\d+)\. /.exec(line);
    if (rule) {
      const n = Number(rule[1]);
      if (current.rules.has(n)) problems.push(`${SPEC_FILE}:${i + 1}: a second rule ${n} in the same section`);
      current.rules.add(n);
    }
    const heading = /^### (.+)$/.exec(line);
    if (heading) current.headings.push(plain(heading[1]));
  }
  return { sections, problems };
}

// One place: `§2c`, then optionally ` rule 10`, ` rules 1-14`,
// ` rules 8 and 11` (also `flow rules`, and `rule` with its number on the
// next line), then optionally a quoted subsection name.
const PLACE = /§(\d+[a-z]?)(?![.\d])(?:(?: flow)? (rules?)(?:\s+(\d+(?:\s*(?:[-–]|,|\band\b)\s*\d+)*))?)?(?:,? "([^"\n]+)")?/y;
const JOINER = /\s*(?:,|;|\/|\band\b)\s*(?=§)/y;
// "SPEC" followed by something other than a section mark: a citation no
// one can follow (`SPEC flow rules 8 and 11`, `SPEC "Delays"`).
const LOOSE = /\bSPEC(?:'s)?(?::\s*|\s+)(?:flow rules?\b|rules?\s+\d|"|“)/g;

/** Leading comment markers of a continued line (`//!`, `///`, `#`, ` * `). */
const continuation = (line) => line.replace(/^\s*(?:\/\/[!/]?|#|\*|<!--)?\s*/, '');

/** `8 and 11`, `1-14`, `3, 5` as the list of rule numbers they name. */
function ruleNumbers(list) {
  const out = [];
  for (const part of list.split(/\s*(?:,|\band\b)\s*/)) {
    const [from, to = from] = part.split(/\s*[-–]\s*/).map(Number);
    for (let n = from; n <= to; n++) out.push(n);
  }
  return out;
}

/**
 * The citations in `lines`, each `{ line, text, section, rules, title }`
 * (`line` 1-based) or, for a "SPEC" that names no section,
 * `{ line, text, loose: true }`. `rules` is the list of rule numbers
 * cited, empty for a whole section.
 */
export function findCitations(lines) {
  const found = [];
  // Parses the places that start at `pos` of `line`, reported at `lineNo`;
  // `next` is the line after `line`, where a number that ends a wrapped
  // "rule" is.
  const places = (line, pos, lineNo, next) => {
    for (;;) {
      PLACE.lastIndex = pos;
      const m = PLACE.exec(line);
      if (!m) return;
      const [text, section, ruleWord, list, title] = m;
      let rules = list ? ruleNumbers(list) : [];
      let shown = text;
      if (ruleWord && !list && PLACE.lastIndex === line.trimEnd().length && next !== undefined) {
        const wrapped = /^(\d+)\b/.exec(continuation(next));
        if (wrapped) {
          rules = [Number(wrapped[1])];
          shown = `${text} ${wrapped[1]}`;
        }
      }
      found.push({ line: lineNo, text: shown, section, rules, title: title ?? null });
      pos = PLACE.lastIndex;
      JOINER.lastIndex = pos;
      if (!JOINER.exec(line)) return;
      pos = JOINER.lastIndex;
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    for (let at = line.indexOf('SPEC §'); at >= 0; at = line.indexOf('SPEC §', at + 1)) {
      places(line, at + 'SPEC '.length, i + 1, lines[i + 1]);
    }
    // "(SPEC" at the end of a wrapped comment, "§2c)" on the next line.
    if (/\bSPEC$/.test(line.trimEnd()) && i + 1 < lines.length) {
      const rest = continuation(lines[i + 1]);
      if (rest.startsWith('§')) places(rest, 0, i + 1, lines[i + 2]);
    }
    for (const m of line.matchAll(LOOSE)) found.push({ line: i + 1, text: m[0], loose: true });
  }
  return found;
}

/** Why `citation` does not resolve in `spec`, or null when it does. */
export function unresolved(citation, spec) {
  if (citation.loose) return 'names no section: cite it as SPEC §<section>[ rule <n>] or SPEC §<section> "<subsection>"';
  const section = spec.sections.get(citation.section);
  if (!section) return `docs/SPEC.md has no §${citation.section} (sections: ${[...spec.sections.keys()].map((s) => `§${s}`).join(' ')})`;
  for (const n of citation.rules) {
    if (!section.rules.has(n)) {
      const have = [...section.rules].sort((a, b) => a - b);
      return have.length
        ? `§${citation.section} has no rule ${n} (its rules: ${have[0]}-${have[have.length - 1]})`
        : `§${citation.section} has no numbered rules`;
    }
  }
  if (citation.title) {
    const want = plain(citation.title);
    if (!section.headings.some((h) => h.startsWith(want))) {
      return `§${citation.section} has no subsection "${citation.title}" (its subsections: ${section.headings.map((h) => `"${h}"`).join(', ') || 'none'})`;
    }
  }
  return null;
}

function trackedFiles() {
  try {
    const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
    return out.split('\0').filter(Boolean);
  } catch (e) {
    console.error(`spec-refs: cannot list the tracked files with git ls-files (a git checkout is needed): ${e.message}`);
    process.exit(1);
  }
}

function readSpec() {
  const file = path.join(ROOT, SPEC_FILE);
  if (!fs.existsSync(file)) {
    console.error(`spec-refs: ${SPEC_FILE} is missing; every "SPEC §" citation points there`);
    process.exit(1);
  }
  const spec = parseSpec(fs.readFileSync(file, 'utf8'));
  if (spec.sections.size === 0) {
    console.error(`spec-refs: ${SPEC_FILE} has no "## §<n>" section headings`);
    process.exit(1);
  }
  return spec;
}

function checkTree(list) {
  const spec = readSpec();
  const failures = [...spec.problems];
  let count = 0;
  const files = new Set();
  for (const rel of trackedFiles()) {
    if (rel === SELF) continue; // its self-test holds wrong citations on purpose
    const abs = path.join(ROOT, rel);
    let buf;
    try {
      buf = fs.readFileSync(abs);
    } catch {
      continue; // tracked but deleted in the work tree
    }
    if (buf.includes(0)) continue; // binary
    const text = buf.toString('utf8');
    if (!text.includes('SPEC')) continue;
    for (const c of findCitations(text.split('\n'))) {
      count++;
      files.add(rel);
      const why = unresolved(c, spec);
      const shown = c.loose ? c.text : `SPEC ${c.text}`;
      if (why) failures.push(`${rel}:${c.line}: ${shown}: ${why}`);
      else if (list) console.log(`${rel}:${c.line}: ${shown}`);
    }
  }
  if (failures.length) {
    for (const f of failures) console.error(f);
    console.error(`spec-refs: ${failures.length} of ${count} citations do not resolve to ${SPEC_FILE}`);
    process.exit(1);
  }
  console.log(`spec-refs: ${count} citations in ${files.size} files resolve to ${SPEC_FILE}`);
}

// Lines that must resolve, and lines that must not, against the real
// docs/SPEC.md: the checker is only worth running if it can fail.
function selfTest() {
  const spec = readSpec();
  const good = [
    ['// SPEC §1 rule 12: nothing outlives a flow', 1],
    ['// SPEC §2c rule 10): the safe ones of RFC 9110 §9.2.1', 1],
    ['//! SPEC §1 flow rules 1–14 as the machine sees them', 1],
    ['/// finishes (SPEC §1 rule 12, §2c rule\n    /// 11).', 2],
    ['// The SDK stage (SPEC §2b and §4): custom fetch', 2],
    ['// retryFetch (SPEC §2b, "A drop-in fetch"): every row', 1],
    ['// store (SPEC §1 "State").', 1],
    ['see SPEC §0 "Entries and builds" and SPEC §2e rule 9', 2],
    ['// a library meeting SPEC §1 rules 8 and 11 can cost', 1],
    ['/// A hedged flow (SPEC\n    /// §2c) takes the same decision', 1],
    ['// SPEC_FILE, SPECIAL_F64, in SPEC\'s words', 0],
  ];
  const bad = [
    ['// SPEC §2c rule 12', 'no rule 12'],
    ['// SPEC §9: no such section', 'no §9'],
    ['// SPEC §1 rule 12, §2c rule 99', 'no rule 99'],
    ['// SPEC §2b "A fetch that does not exist"', 'no subsection'],
    ['// SPEC §2d rule 1', 'no numbered rules'],
    ['// SPEC §1 rules 13-15', 'no rule 15'],
    ['/// (SPEC §2c rule\n/// 40)', 'no rule 40'],
    ['// SPEC §1 rules 8 and 15', 'no rule 15'],
    ['/// flow (SPEC\n/// §2f) takes', 'no §2f'],
    ['// meeting SPEC flow rules 8 and 11', 'names no section'],
    ['// (SPEC "Delays")', 'names no section'],
  ];
  const errors = [];
  for (const [text, expected] of good) {
    const found = findCitations(text.split('\n'));
    if (found.length !== expected) errors.push(`expected ${expected} citation(s) in ${JSON.stringify(text)}, found ${found.length}`);
    for (const c of found) {
      const why = unresolved(c, spec);
      if (why) errors.push(`${JSON.stringify(text)} should resolve: ${why}`);
    }
  }
  for (const [text, reason] of bad) {
    const whys = findCitations(text.split('\n')).map((c) => unresolved(c, spec)).filter(Boolean);
    if (!whys.some((w) => w.includes(reason))) errors.push(`${JSON.stringify(text)} should fail with "${reason}", got ${JSON.stringify(whys)}`);
  }
  if (spec.problems.length) errors.push(...spec.problems);
  if (errors.length) {
    for (const e of errors) console.error(`spec-refs self-test: ${e}`);
    process.exit(1);
  }
  console.log(`spec-refs self-test: ${good.length} good and ${bad.length} bad citation lines judged as expected`);
}

if (process.argv.includes('--self-test')) selfTest();
else checkTree(process.argv.includes('--list'));
