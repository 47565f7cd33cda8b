//! What `retryFetch` decides about HTTP: which requests may be sent again,
//! which responses count as a failed attempt, and how long a server's
//! `Retry-After` makes the next wait. Pure functions of the request's
//! method, headers and body kind, the response's status and header, and the
//! options, with the defaults the HTTP clients people use have converged on
//! (ky, got).

use alloc::string::String;
use alloc::vec::Vec;

use super::options::check_non_negative;
use super::retry_after;

/// Methods retried by default: the idempotent ones of RFC 9110 §9.2.2.
pub const DEFAULT_METHODS: [&str; 6] = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"];
/// Statuses that make an attempt fail by default: timeout, rate limited,
/// and the server errors a retry can outlast.
pub const DEFAULT_STATUS_CODES: [u16; 6] = [408, 429, 500, 502, 503, 504];
/// Statuses whose `Retry-After` sets the wait by default.
pub const DEFAULT_AFTER_STATUS_CODES: [u16; 3] = [413, 429, 503];
/// Methods a call may hedge (send again while an earlier attempt still
/// runs, SPEC §2c rule 10): the safe ones of RFC 9110 §9.2.1 that are
/// read, not written.
pub const HEDGED_METHODS: [&str; 3] = ["GET", "HEAD", "OPTIONS"];
/// The header that makes a POST or PATCH safe to send again (IETF
/// httpapi, "The Idempotency-Key HTTP Header Field").
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Why a `retryFetch` option was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// A `methods` entry that is not an HTTP token (RFC 9110 §5.6.2).
    Method,
    /// A `statusCodes` or `afterStatusCodes` entry that is not an integer
    /// from 100 to 599.
    Status,
    /// `maxRetryAfter` negative or NaN.
    MaxRetryAfter,
}

impl HttpError {
    /// What the value should have been, as the words of an error message.
    pub const fn words(self) -> &'static str {
        match self {
            HttpError::Method => "an HTTP method name (a token such as 'GET')",
            HttpError::Status => "an integer status code from 100 to 599",
            HttpError::MaxRetryAfter => "a number of milliseconds >= 0",
        }
    }
}

/// The HTTP half of a `retryFetch` configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpPolicy {
    /// Methods sent again, upper case (`methods`).
    pub methods: Vec<String>,
    /// Statuses that make an attempt fail (`statusCodes`).
    pub status_codes: Vec<u16>,
    /// Statuses whose `Retry-After` sets the wait (`afterStatusCodes`).
    pub after_status_codes: Vec<u16>,
    /// The longest wait a server's hint may ask for, in ms
    /// (`maxRetryAfter`, default no limit).
    pub max_retry_after: f64,
}

impl Default for HttpPolicy {
    fn default() -> HttpPolicy {
        HttpPolicy {
            methods: DEFAULT_METHODS.iter().map(|m| String::from(*m)).collect(),
            status_codes: DEFAULT_STATUS_CODES.to_vec(),
            after_status_codes: DEFAULT_AFTER_STATUS_CODES.to_vec(),
            max_retry_after: f64::INFINITY,
        }
    }
}

/// `name` as a method this policy compares, upper case; `Err` when it is
/// not an HTTP token (so no header injection or empty name gets through).
pub fn check_method(name: &str) -> Result<String, HttpError> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(HttpError::Method);
    }
    Ok(name.to_ascii_uppercase())
}

/// A status code given as a number: an integer from 100 to 599.
pub fn check_status(code: f64) -> Result<u16, HttpError> {
    if (100.0..=599.0).contains(&code) && libm::floor(code) == code {
        Ok(code as u16)
    } else {
        Err(HttpError::Status)
    }
}

/// `maxRetryAfter`: not negative, not NaN (Infinity: no limit).
pub fn check_max_retry_after(ms: f64) -> Result<f64, HttpError> {
    check_non_negative(ms).map_err(|_| HttpError::MaxRetryAfter)
}

/// What a request's body is, as the host sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// A string.
    Text,
    /// An `ArrayBuffer` or a view of one (a typed array, a `DataView`).
    Bytes,
    /// A `Blob` or `File`.
    Blob,
    /// `URLSearchParams`.
    SearchParams,
    /// `FormData`.
    FormData,
    /// The body of a `Request` input, which is cloned for each attempt.
    OfRequest,
    /// A `ReadableStream`.
    Stream,
    /// Anything else `fetch` takes: an async iterable, a Node `Readable`,
    /// or a value `fetch` will refuse.
    Other,
}

impl Body {
    /// Whether every attempt can send this body intact. An allow-list:
    /// the kinds `fetch` reads its own copy of each time, and a `Request`,
    /// whose clone keeps its body whatever its source. Anything else is
    /// read as it is sent, so a second attempt would go out empty or
    /// partial.
    pub const fn replays(self) -> bool {
        !matches!(self, Body::Stream | Body::Other)
    }
}

/// What a request is, as far as sending it again goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestKind<'a> {
    /// The method, as given (compared upper case).
    pub method: &'a str,
    /// It carries an `Idempotency-Key` header.
    pub idempotency_key: bool,
    /// What its body is.
    pub body: Body,
}

/// What an attempt of a `retryFetch` call failed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A response whose status is one of `statusCodes`.
    Status,
    /// `fetch` rejected with a `TypeError` for a request it accepts: the
    /// network (a refused or dropped connection, a DNS failure).
    Network,
    /// `fetch` refused the input itself (an invalid URL, a bad method, a
    /// forbidden header value, a used body): the caller's mistake, which
    /// another attempt would only repeat.
    Refused,
    /// The attempt ran past `maxExecutionTime` (with
    /// `retryOnExecutionTimeout`).
    TimedOut,
    /// A circuit breaker refused the attempt (SPEC §2e): nothing was sent.
    CircuitOpen,
    /// Anything else: a wrapped `fetch`'s own error, an error thrown by a
    /// hook.
    Other,
}

impl Failure {
    /// Whether another attempt may follow this failure of a request that
    /// `resendable` (see [`HttpPolicy::retries`]): a failing status, the
    /// network, a per-try timeout or an open circuit, never the caller's
    /// own mistake.
    pub const fn retryable(self, resendable: bool) -> bool {
        resendable
            && matches!(
                self,
                Failure::Status | Failure::Network | Failure::TimedOut | Failure::CircuitOpen
            )
    }
}

/// The headers of a failing response that can ask for a wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hints<'a> {
    /// `Retry-After`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
    pub retry_after: Option<&'a str>,
    /// `RateLimit-Reset`: delta-seconds (the IETF RateLimit header fields).
    pub ratelimit_reset: Option<&'a str>,
    /// `X-RateLimit-Reset`: seconds, or, above 10^9, a Unix time in
    /// seconds (as GitHub sends it).
    pub x_ratelimit_reset: Option<&'a str>,
}

/// Above this, an `X-RateLimit-Reset` is a Unix time in seconds (10^9 s is
/// September 2001; no rate-limit window lasts 31 years).
const UNIX_TIME_FROM: f64 = 1e9;

impl HttpPolicy {
    /// Whether a request may be sent more than once: its body replays
    /// ([`Body::replays`]), and its method is one of `methods`, or a POST or PATCH with an
    /// `Idempotency-Key` (the server then answers a repeat as the first).
    pub fn retries(&self, request: RequestKind<'_>) -> bool {
        if !request.body.replays() {
            return false;
        }
        let method = request.method.to_ascii_uppercase();
        self.methods.contains(&method)
            || (request.idempotency_key && (method == "POST" || method == "PATCH"))
    }

    /// Whether a request's attempts may overlap when the function has
    /// `hedge` (SPEC §2c rule 10): it may be sent more than once
    /// ([`HttpPolicy::retries`]), and it is a read, `GET`, `HEAD` or
    /// `OPTIONS`, whatever `methods` and an `Idempotency-Key` allow
    /// besides: a write sent twice at once is applied twice, or races
    /// with itself. Never with a `beforeRetry` hook (`hooked`): it decides
    /// each attempt after a failure, which a hedge does not wait for.
    pub fn hedges(&self, request: RequestKind<'_>, hooked: bool) -> bool {
        !hooked
            && self.retries(request)
            && HEDGED_METHODS
                .iter()
                .any(|m| m.eq_ignore_ascii_case(request.method))
    }

    /// Whether a response with `status` is a failed attempt.
    pub fn fails(&self, status: u16) -> bool {
        self.status_codes.contains(&status)
    }

    /// The wait a failing response asks for, received at `now` (ms since
    /// the epoch), when its status is one of `afterStatusCodes`: its
    /// `Retry-After`, else its `RateLimit-Reset`, else its
    /// `X-RateLimit-Reset` (the first that reads as a wait), clamped to
    /// `maxRetryAfter`; `None` to keep the computed backoff.
    pub fn hint(&self, status: u16, hints: Hints<'_>, now: f64) -> Option<f64> {
        if !self.after_status_codes.contains(&status) {
            return None;
        }
        let ms = hints
            .retry_after
            .and_then(|t| retry_after::parse(t, now))
            .or_else(|| hints.ratelimit_reset.and_then(retry_after::delta_seconds))
            .or_else(|| hints.x_ratelimit_reset.and_then(|t| reset_at(t, now)))?;
        Some(ms.min(self.max_retry_after))
    }
}

/// An `X-RateLimit-Reset` received at `now`: seconds, or above 10^9 the
/// Unix time the window resets at (a fraction of a second is dropped);
/// `None` when it is not a number or that time has passed.
fn reset_at(text: &str, now: f64) -> Option<f64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = retry_after::delta_seconds(whole)?;
    let ms = if ms > UNIX_TIME_FROM * 1000.0 {
        ms - now
    } else {
        ms
    };
    (ms >= 0.0).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, idempotency_key: bool, replayable_body: bool) -> RequestKind<'_> {
        RequestKind {
            method,
            idempotency_key,
            body: if replayable_body {
                Body::Text
            } else {
                Body::Stream
            },
        }
    }

    fn retry_after(text: &str) -> Hints<'_> {
        Hints {
            retry_after: Some(text),
            ..Hints::default()
        }
    }

    #[test]
    fn idempotent_methods_retry_and_post_needs_a_key() {
        let p = HttpPolicy::default();
        for m in ["GET", "get", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"] {
            assert!(p.retries(req(m, false, true)), "{m}");
        }
        assert!(!p.retries(req("POST", false, true)));
        assert!(!p.retries(req("PATCH", false, true)));
        assert!(p.retries(req("POST", true, true)));
        assert!(p.retries(req("patch", true, true)));
        assert!(!p.retries(req("CONNECT", true, true)));
    }

    #[test]
    fn a_stream_body_is_sent_once() {
        let p = HttpPolicy::default();
        assert!(!p.retries(req("PUT", false, false)));
        assert!(!p.retries(req("POST", true, false)));
    }

    #[test]
    fn only_reads_with_a_body_that_replays_hedge() {
        let p = HttpPolicy::default();
        for m in ["GET", "get", "Head", "OPTIONS"] {
            assert!(p.hedges(req(m, false, true), false), "{m}");
            assert!(
                !p.hedges(req(m, false, false), false),
                "{m}: a one-shot body"
            );
            assert!(
                !p.hedges(req(m, false, true), true),
                "{m}: with beforeRetry"
            );
        }
        // Retried, but writes: never sent twice at once.
        for m in ["PUT", "DELETE", "TRACE", "POST", "PATCH"] {
            assert!(!p.hedges(req(m, true, true), false), "{m}");
        }
        let bodies = |body| RequestKind {
            method: "GET",
            idempotency_key: false,
            body,
        };
        use Body::*;
        for b in [None, Text, Bytes, Blob, SearchParams, FormData, OfRequest] {
            assert!(p.hedges(bodies(b), false), "{b:?}");
        }
        for b in [Stream, Other] {
            assert!(!p.hedges(bodies(b), false), "{b:?}");
        }
        // A read the caller took out of `methods` is not sent again at all.
        let posts_only = HttpPolicy {
            methods: alloc::vec![String::from("POST")],
            ..HttpPolicy::default()
        };
        assert!(!posts_only.hedges(req("GET", false, true), false));
        let heads = HttpPolicy {
            methods: alloc::vec![String::from("HEAD")],
            ..HttpPolicy::default()
        };
        assert!(heads.hedges(req("head", false, true), false));
        assert!(!heads.hedges(req("GET", false, true), false));
    }

    #[test]
    fn statuses_and_hints() {
        let p = HttpPolicy::default();
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(p.fails(s));
        }
        for s in [200, 201, 301, 400, 401, 404, 413, 501] {
            assert!(!p.fails(s));
        }
        assert_eq!(p.hint(503, retry_after("2"), 0.0), Some(2000.0));
        assert_eq!(
            p.hint(429, retry_after("Thu, 01 Jan 1970 00:00:05 GMT"), 1000.0),
            Some(4000.0)
        );
        // A status whose hint is not followed, an absent or bad header.
        assert_eq!(p.hint(500, retry_after("2"), 0.0), None);
        assert_eq!(p.hint(503, Hints::default(), 0.0), None);
        assert_eq!(p.hint(503, retry_after("soon"), 0.0), None);
    }

    #[test]
    fn max_retry_after_clamps() {
        let p = HttpPolicy {
            max_retry_after: 1500.0,
            ..HttpPolicy::default()
        };
        assert_eq!(p.hint(503, retry_after("3600"), 0.0), Some(1500.0));
        assert_eq!(p.hint(503, retry_after("1"), 0.0), Some(1000.0));
        let reset = Hints {
            ratelimit_reset: Some("3600"),
            ..Hints::default()
        };
        assert_eq!(p.hint(429, reset, 0.0), Some(1500.0));
        let github = Hints {
            x_ratelimit_reset: Some("1800000000"),
            ..Hints::default()
        };
        assert_eq!(p.hint(429, github, 1_799_999_999_000.0), Some(1000.0));
    }

    #[test]
    fn bodies_replay_by_allow_list() {
        use Body::*;
        for b in [None, Text, Bytes, Blob, SearchParams, FormData, OfRequest] {
            assert!(b.replays(), "{b:?}");
        }
        for b in [Stream, Other] {
            assert!(!b.replays(), "{b:?}");
        }
        let p = HttpPolicy::default();
        let put = |body| RequestKind {
            method: "PUT",
            idempotency_key: false,
            body,
        };
        assert!(p.retries(put(OfRequest)));
        assert!(!p.retries(put(Other)), "an async iterable or a Readable");
    }

    #[test]
    fn only_the_network_a_status_or_a_timeout_is_retried() {
        use Failure::*;
        for f in [Status, Network, TimedOut] {
            assert!(f.retryable(true), "{f:?}");
            assert!(!f.retryable(false), "{f:?} of a request sent once");
        }
        for f in [Refused, Other] {
            assert!(!f.retryable(true), "{f:?}");
        }
    }

    #[test]
    fn rate_limit_headers_when_retry_after_is_absent() {
        let p = HttpPolicy::default();
        let h =
            |r: Option<&'static str>, rl: Option<&'static str>, x: Option<&'static str>| Hints {
                retry_after: r,
                ratelimit_reset: rl,
                x_ratelimit_reset: x,
            };
        // Retry-After first, then RateLimit-Reset, then X-RateLimit-Reset.
        assert_eq!(
            p.hint(429, h(Some("1"), Some("2"), Some("3")), 0.0),
            Some(1000.0)
        );
        assert_eq!(
            p.hint(429, h(None, Some("2"), Some("3")), 0.0),
            Some(2000.0)
        );
        assert_eq!(p.hint(429, h(None, None, Some("3")), 0.0), Some(3000.0));
        // An unreadable one gives way to the next.
        assert_eq!(
            p.hint(429, h(Some("soon"), Some("2"), None), 0.0),
            Some(2000.0)
        );
        assert_eq!(
            p.hint(429, h(None, Some("-2"), Some("3")), 0.0),
            Some(3000.0)
        );
        // X-RateLimit-Reset: seconds (a fraction dropped), or a Unix time.
        assert_eq!(p.hint(503, h(None, None, Some("1.5")), 0.0), Some(1000.0));
        let now = 1_700_000_000_000.0;
        assert_eq!(
            p.hint(503, h(None, None, Some("1700000030")), now),
            Some(30_000.0)
        );
        assert_eq!(
            p.hint(503, h(None, None, Some("1699999990")), now),
            None,
            "passed"
        );
        for bad in ["", "x", ".5", "1.5.2", "-1", "1e3"] {
            assert_eq!(p.hint(503, h(None, None, Some(bad)), 0.0), None, "{bad:?}");
        }
        // Only for afterStatusCodes.
        assert_eq!(p.hint(500, h(None, Some("2"), None), 0.0), None);
    }

    #[test]
    fn option_checks() {
        assert_eq!(check_method("get"), Ok(String::from("GET")));
        assert_eq!(check_method("M-SEARCH"), Ok(String::from("M-SEARCH")));
        for bad in ["", "GE T", "GET\r\n", "GÉT", "(GET)"] {
            assert_eq!(check_method(bad), Err(HttpError::Method), "{bad:?}");
        }
        assert_eq!(check_status(503.0), Ok(503));
        for bad in [99.0, 600.0, 503.5, f64::NAN, f64::INFINITY, -1.0] {
            assert_eq!(check_status(bad), Err(HttpError::Status));
        }
        assert_eq!(check_max_retry_after(0.0), Ok(0.0));
        assert_eq!(check_max_retry_after(f64::INFINITY), Ok(f64::INFINITY));
        assert_eq!(check_max_retry_after(-1.0), Err(HttpError::MaxRetryAfter));
        assert_eq!(
            check_max_retry_after(f64::NAN),
            Err(HttpError::MaxRetryAfter)
        );
    }
}
