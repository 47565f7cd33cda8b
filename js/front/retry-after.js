// Reads an HTTP Retry-After value (RFC 9110 §10.2.3): delta-seconds or an
// HTTP-date in any of the three formats §5.6.7 requires recipients to accept.

const MONTHS = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
// IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
const IMF = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
// obsolete RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
const RFC850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
// obsolete asctime: Sun Nov  6 08:49:37 1994
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

function utc(year, month, day, h, m, s) {
  if (day < 1 || day > 31 || h > 23 || m > 59 || s > 60) return NaN;
  const t = Date.UTC(year, month, day, h, m, Math.min(s, 59));
  // Reject dates that rolled over (31 Feb).
  return new Date(t).getUTCDate() === day ? t : NaN;
}

function parseDate(text, now) {
  let m = IMF.exec(text);
  if (m) return utc(+m[3], MONTHS[m[2]], +m[1], +m[4], +m[5], +m[6]);
  m = RFC850.exec(text);
  if (m) {
    // Two-digit years more than 50 years ahead are in the past century (§5.6.7).
    const nowYear = new Date(now).getUTCFullYear();
    let year = 2000 + +m[3];
    if (year > nowYear + 50) year -= 100;
    return utc(year, MONTHS[m[2]], +m[1], +m[4], +m[5], +m[6]);
  }
  m = ASCTIME.exec(text);
  if (m) return utc(+m[7], MONTHS[m[1]], +m[2].trim(), +m[3], +m[4], +m[5]);
  return NaN;
}

function headerOf(value) {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return undefined;
  try {
    const headers = typeof value.get === 'function' ? value : value.headers;
    if (headers && typeof headers.get === 'function') {
      const v = headers.get('retry-after');
      return typeof v === 'string' ? v : undefined;
    }
  } catch {
    // Not a Headers or Response after all.
  }
  return undefined;
}

/**
 * Milliseconds to wait according to a Retry-After value, from a string, a
 * `Headers` or a `Response`; `undefined` when absent, invalid, or negative
 * (a date in the past included). `now` (ms since the epoch, default
 * `Date.now()`) is what HTTP-dates are measured from.
 */
export function parseRetryAfter(value, now) {
  const text = headerOf(value);
  if (text === undefined) return undefined;
  const t = text.trim();
  if (/^\d+$/.test(t)) {
    const ms = Number(t) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  const base = typeof now === 'number' && Number.isFinite(now) ? now : Date.now();
  const at = parseDate(t, base);
  if (Number.isNaN(at)) return undefined;
  const ms = at - base;
  return ms >= 0 ? ms : undefined;
}
