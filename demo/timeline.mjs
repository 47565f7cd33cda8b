// Presentation helpers for the demo: colours (only on a TTY), the live
// per-request timeline, and the summary table.

const useColor =
  Boolean(process.stdout.isTTY) && !process.env.NO_COLOR && process.env.TERM !== 'dumb';

const paint = (code) => (s) => (useColor ? `\x1b[${code}m${s}\x1b[0m` : String(s));
export const c = {
  bold: paint('1'),
  dim: paint('2'),
  red: paint('31'),
  green: paint('32'),
  yellow: paint('33'),
  blue: paint('34'),
  magenta: paint('35'),
  cyan: paint('36'),
};

export const out = (s = '') => process.stdout.write(s);
export const println = (s = '') => out(`${s}\n`);

const ANSI = /\x1b\[[0-9;]*m/g;
export const visibleLength = (s) => String(s).replace(ANSI, '').length;
const padEnd = (s, n) => s + ' '.repeat(Math.max(0, n - visibleLength(s)));
const padStart = (s, n) => ' '.repeat(Math.max(0, n - visibleLength(s))) + s;

export const ms = (n) => `${Math.round(n)} ms`;

/**
 * One request's live timeline. Lines are written as the retryer's callbacks
 * fire; an attempt's line is opened when the attempt starts and completed
 * with its outcome, a wait's line is opened in onRetry (with the reason for
 * the wait) and completed when the next attempt starts (with the time
 * actually slept) or when the flow ends during the wait.
 */
export class Timeline {
  constructor(title, subtitle) {
    this.t0 = performance.now();
    this.open = null; // null | { kind: 'attempt', n } | { kind: 'wait', start }
    this.resolved = new Set(); // attempts whose outcome line was written
    this.waits = []; // measured waits, in order: { after, ms, why }
    this.current = 0;
    println();
    println(`${c.bold(c.cyan('▶'))} ${c.bold(title)}`);
    if (subtitle) println(`  ${c.dim(subtitle)}`);
  }

  elapsed() {
    return performance.now() - this.t0;
  }

  stamp() {
    return c.dim(padStart(`+${Math.round(this.elapsed())} ms`, 10));
  }

  attemptStart(n) {
    if (this.open?.kind === 'wait') {
      const slept = performance.now() - this.open.start;
      this.waits.push({ after: n - 1, ms: slept, why: this.open.why });
      this.closeLine(c.dim(`slept ${ms(slept)}`));
    } else if (this.open) {
      this.closeLine();
    }
    this.current = n;
    this.attemptAt = performance.now();
    out(`  ${this.stamp()}  attempt ${n}  `);
    this.open = { kind: 'attempt', n };
  }

  /** The outcome of attempt n (written once per attempt). */
  attemptResult(n, text) {
    if (this.resolved.has(n)) return;
    this.resolved.add(n);
    if (n === this.current) text += c.dim(`  (${ms(performance.now() - this.attemptAt)})`);
    if (this.open?.kind === 'attempt' && this.open.n === n) {
      this.closeLine(text);
    } else {
      this.closeLine();
      println(`  ${this.stamp()}  attempt ${n}  ${text}`);
    }
  }

  waitStart(why) {
    if (this.open) this.closeLine();
    out(`  ${' '.repeat(10)}  ${c.yellow('↻ wait')}  ${why} … `);
    this.open = { kind: 'wait', start: performance.now(), why };
  }

  /** Ends an open wait line early (the flow ended during the wait). */
  interruptWait(text) {
    if (this.open?.kind !== 'wait') return false;
    this.closeLine(text);
    return true;
  }

  note(text) {
    if (this.open) this.closeLine();
    println(`  ${this.stamp()}  ${text}`);
  }

  closeLine(text = '') {
    if (!this.open) return;
    this.open = null;
    println(text);
  }

  end(text) {
    if (this.open) this.closeLine(c.dim('…'));
    println(`  ${c.bold('⇒')} ${text}`);
  }
}

/** A plain text table; `rows` are arrays of (possibly coloured) strings. */
export function table(header, rows) {
  const widths = header.map((h, i) =>
    Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i]))),
  );
  const line = (cells) => `  ${cells.map((s, i) => padEnd(s, widths[i])).join('  │  ')}`.trimEnd();
  println(line(header.map((h) => c.bold(h))));
  println(`  ${widths.map((w) => '─'.repeat(w)).join('──┼──')}`);
  for (const r of rows) println(line(r));
}

/** A one-line histogram (sparkline) of event times, `bucket` ms per column. */
export function sparkline(times, bucket, from, to) {
  const n = Math.max(1, Math.ceil((to - from) / bucket));
  const counts = new Array(n).fill(0);
  for (const t of times) counts[Math.min(n - 1, Math.max(0, Math.floor((t - from) / bucket)))]++;
  const max = Math.max(1, ...counts);
  const blocks = ' ▁▂▃▄▅▆▇█';
  return counts.map((k) => (k === 0 ? '·' : blocks[Math.max(1, Math.round((k / max) * 8))])).join('');
}
