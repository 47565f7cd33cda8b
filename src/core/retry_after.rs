//! HTTP `Retry-After` (RFC 9110 §10.2.3): delta-seconds, or an HTTP-date in
//! any of the three formats §5.6.7 requires recipients to accept. A pure
//! function of the header text and the current time, so it is tested here
//! with fixed clocks and used by both `parseRetryAfter` and `retryFetch`.

const MS_PER_DAY: f64 = 86_400_000.0;
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Milliseconds to wait according to a `Retry-After` value received at
/// `now` (ms since the epoch): `None` when the text is neither form, or
/// names a moment in the past.
pub fn parse(text: &str, now: f64) -> Option<f64> {
    let t = text.trim();
    if let Some(ms) = delta_seconds(t) {
        return Some(ms);
    }
    let at = http_date(t, now)?;
    let ms = at - now;
    (ms >= 0.0).then_some(ms)
}

/// Milliseconds in a delta-seconds value (one or more digits; a header
/// value as `Headers.get` returns it, with no whitespace around); `None`
/// for anything else.
pub fn delta_seconds(t: &str) -> Option<f64> {
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Folded by hand rather than with `str::parse::<f64>`, whose tables
    // would add kilobytes to the download; a huge count overflows to
    // infinity and is refused.
    let secs = t
        .bytes()
        .fold(0.0, |n: f64, b| n * 10.0 + f64::from(b - b'0'));
    let ms = secs * 1000.0;
    ms.is_finite().then_some(ms)
}

/// The moment (ms since the epoch) an HTTP-date names.
fn http_date(t: &str, now: f64) -> Option<f64> {
    imf_fixdate(t)
        .or_else(|| rfc850(t, now))
        .or_else(|| asctime(t))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn imf_fixdate(t: &str) -> Option<f64> {
    let mut c = Cursor(t);
    c.one_of(&DAYS)?;
    c.lit(", ")?;
    let day = c.digits(2)?;
    c.lit(" ")?;
    let month = c.one_of(&MONTHS)?;
    c.lit(" ")?;
    let year = c.digits(4)?;
    c.lit(" ")?;
    let (h, m, s) = c.time()?;
    c.lit(" GMT")?;
    c.end()?;
    utc(i64::from(year), month, day, h, m, s)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete): a two-digit year more than
/// 50 years ahead of `now` is in the past century (§5.6.7).
fn rfc850(t: &str, now: f64) -> Option<f64> {
    let mut c = Cursor(t);
    c.one_of(&LONG_DAYS)?;
    c.lit(", ")?;
    let day = c.digits(2)?;
    c.lit("-")?;
    let month = c.one_of(&MONTHS)?;
    c.lit("-")?;
    let yy = c.digits(2)?;
    c.lit(" ")?;
    let (h, m, s) = c.time()?;
    c.lit(" GMT")?;
    c.end()?;
    let mut year = 2000 + i64::from(yy);
    if year > year_of(now) + 50 {
        year -= 100;
    }
    utc(year, month, day, h, m, s)
}

/// `Sun Nov  6 08:49:37 1994` (obsolete ANSI C asctime).
fn asctime(t: &str) -> Option<f64> {
    let mut c = Cursor(t);
    c.one_of(&DAYS)?;
    c.lit(" ")?;
    let month = c.one_of(&MONTHS)?;
    c.lit(" ")?;
    let day = if c.0.starts_with(' ') {
        c.lit(" ")?;
        c.digits(1)?
    } else {
        c.digits(2)?
    };
    c.lit(" ")?;
    let (h, m, s) = c.time()?;
    c.lit(" ")?;
    let year = c.digits(4)?;
    c.end()?;
    utc(i64::from(year), month, day, h, m, s)
}

/// A date and time in UTC as ms since the epoch; `None` for a field out of
/// range or a day the month does not have (31 Feb). A leap second counts as
/// the second before it.
fn utc(year: i64, month: usize, day: u32, h: u32, m: u32, s: u32) -> Option<f64> {
    if day < 1 || day > days_in_month(year, month) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month as i64 + 1, i64::from(day));
    let secs = i64::from(h * 3600 + m * 60 + s.min(59));
    Some((days * 86_400 + secs) as f64 * 1000.0)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: usize) -> u32 {
    match month {
        1 if is_leap(year) => 29,
        1 => 28,
        3 | 5 | 8 | 10 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (month 1-12), after
/// Howard Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The UTC year of a moment in ms since the epoch (the inverse of
/// `days_from_civil`, year only); 1970 for a moment that is not finite.
fn year_of(ms: f64) -> i64 {
    if !ms.is_finite() {
        return 1970;
    }
    // Saturating: a clock beyond ±2^63 ms is not a date anyway.
    let z = libm::floor(ms / MS_PER_DAY) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let year = yoe + era * 400;
    if mp >= 10 {
        year + 1
    } else {
        year
    }
}

/// What is left of the text being parsed.
struct Cursor<'a>(&'a str);

impl Cursor<'_> {
    fn lit(&mut self, s: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(s)?;
        Some(())
    }

    /// Which of `names` comes next (its index).
    fn one_of(&mut self, names: &[&str]) -> Option<usize> {
        let i = names.iter().position(|n| self.0.starts_with(n))?;
        self.0 = self.0.get(names.get(i)?.len()..)?;
        Some(i)
    }

    /// Exactly `n` ASCII digits.
    fn digits(&mut self, n: usize) -> Option<u32> {
        let head = self.0.get(..n)?;
        if !head.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        self.0 = self.0.get(n..)?;
        head.parse().ok()
    }

    /// `HH:MM:SS`
    fn time(&mut self) -> Option<(u32, u32, u32)> {
        let h = self.digits(2)?;
        self.lit(":")?;
        let m = self.digits(2)?;
        self.lit(":")?;
        let s = self.digits(2)?;
        Some((h, m, s))
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1994-11-06T08:49:37Z, the RFC's example moment.
    const EXAMPLE: f64 = 784_111_777_000.0;

    #[test]
    fn delta_seconds() {
        assert_eq!(parse("120", 0.0), Some(120_000.0));
        assert_eq!(parse(" 0 ", 5.0), Some(0.0));
        assert_eq!(parse("1.5", 0.0), None);
        assert_eq!(parse("-1", 0.0), None);
        assert_eq!(parse("", 0.0), None);
        assert_eq!(parse(&"9".repeat(400), 0.0), None);
    }

    #[test]
    fn the_three_date_formats() {
        let before = EXAMPLE - 2_000.0;
        assert_eq!(
            parse("Sun, 06 Nov 1994 08:49:37 GMT", before),
            Some(2_000.0)
        );
        assert_eq!(
            parse("Sunday, 06-Nov-94 08:49:37 GMT", before),
            Some(2_000.0)
        );
        assert_eq!(parse("Sun Nov  6 08:49:37 1994", before), Some(2_000.0));
        assert_eq!(
            parse("Sun Nov 16 08:49:37 1994", before),
            Some(864_002_000.0)
        );
    }

    #[test]
    fn past_and_malformed_dates() {
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT", EXAMPLE + 1.0), None);
        assert_eq!(parse("Sun, 31 Feb 2030 08:49:37 GMT", 0.0), None);
        assert_eq!(parse("Sun, 06 Nov 2030 24:00:00 GMT", 0.0), None);
        assert_eq!(parse("Sun, 06 Nov 2030 08:49:37 UTC", 0.0), None);
        assert_eq!(parse("tomorrow", 0.0), None);
        assert!(parse("Thu, 29 Feb 2032 00:00:00 GMT", 0.0).is_some());
        assert_eq!(parse("Tue, 29 Feb 2033 00:00:00 GMT", 0.0), None);
    }

    #[test]
    fn leap_second_counts_as_the_one_before() {
        let a = parse("Wed, 31 Dec 2036 23:59:60 GMT", 0.0);
        let b = parse("Wed, 31 Dec 2036 23:59:59 GMT", 0.0);
        assert_eq!(a, b);
    }

    #[test]
    fn two_digit_years_follow_the_fifty_year_rule() {
        // Seen in 2026: "76" is 2076 (50 years ahead), "77" is 1977.
        let now = 1_780_000_000_000.0;
        assert_eq!(year_of(now), 2026);
        assert_eq!(year_of(f64::NAN), 1970);
        assert!(parse("Thursday, 01-Jan-76 00:00:00 GMT", now).is_some());
        assert_eq!(parse("Saturday, 01-Jan-77 00:00:00 GMT", now), None);
    }

    #[test]
    fn civil_dates_round_trip() {
        for (y, m, d, days) in [
            (1970, 1, 1, 0),
            (2000, 3, 1, 11_017),
            (1969, 12, 31, -1),
            (1600, 2, 29, -135_081),
        ] {
            assert_eq!(days_from_civil(y, m, d), days);
            assert_eq!(year_of(days as f64 * MS_PER_DAY), y);
        }
    }
}
