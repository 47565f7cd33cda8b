// Small statistics and formatting helpers.

export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** { median, p25, p75, min, max, n } of an array of numbers. */
export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return {
    median: quantile(s, 0.5),
    p25: quantile(s, 0.25),
    p75: quantile(s, 0.75),
    min: s[0],
    max: s[s.length - 1],
    n: s.length,
  };
}

/** Interquartile range relative to the median, in percent. */
export function spreadPct(sum) {
  return sum && sum.median > 0 ? ((sum.p75 - sum.p25) / sum.median) * 100 : NaN;
}

export function fmtInt(x) {
  if (x == null || !Number.isFinite(x)) return '—';
  return Math.round(x).toLocaleString('en-US');
}

export function fmtNum(x, digits = 1) {
  if (x == null || !Number.isFinite(x)) return '—';
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function fmtRatio(x) {
  if (x == null || !Number.isFinite(x)) return '—';
  return x >= 100 ? `${x.toFixed(0)}×` : x >= 10 ? `${x.toFixed(1)}×` : `${x.toFixed(2)}×`;
}

export function fmtBytes(x) {
  if (x == null || !Number.isFinite(x)) return '—';
  return Math.round(x).toLocaleString('en-US');
}

/** A plain-text table; `align` is a string of 'l'/'r' per column. */
export function table(headers, rows, align) {
  const cells = [headers, ...rows].map((r) => r.map((c) => String(c ?? '')));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const pad = (s, i) => ((align?.[i] ?? 'l') === 'r' ? s.padStart(widths[i]) : s.padEnd(widths[i]));
  const line = (r) => r.map(pad).join('  ').trimEnd();
  const out = [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  ')];
  for (const r of cells.slice(1)) out.push(line(r));
  return out.join('\n');
}
