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

/// What a request is, as far as sending it again goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestKind<'a> {
    /// The method, as given (compared upper case).
    pub method: &'a str,
    /// It carries an `Idempotency-Key` header.
    pub idempotency_key: bool,
    /// Its body can be sent again as it is: none, a string, bytes, a
    /// `Blob`, `URLSearchParams` or `FormData`, or a `Request` cloned per
    /// attempt; not a `ReadableStream`, which is read once.
    pub replayable_body: bool,
}

impl HttpPolicy {
    /// Whether a request may be sent more than once: its body can be sent
    /// again, and its method is one of `methods`, or a POST or PATCH with an
    /// `Idempotency-Key` (the server then answers a repeat as the first).
    pub fn retries(&self, request: RequestKind<'_>) -> bool {
        if !request.replayable_body {
            return false;
        }
        let method = request.method.to_ascii_uppercase();
        self.methods.contains(&method)
            || (request.idempotency_key && (method == "POST" || method == "PATCH"))
    }

    /// Whether a response with `status` is a failed attempt.
    pub fn fails(&self, status: u16) -> bool {
        self.status_codes.contains(&status)
    }

    /// The wait a response asks for: its `Retry-After` (received at `now`)
    /// when its status is one of `afterStatusCodes`, clamped to
    /// `maxRetryAfter`; `None` to keep the computed backoff.
    pub fn hint(&self, status: u16, retry_after: Option<&str>, now: f64) -> Option<f64> {
        if !self.after_status_codes.contains(&status) {
            return None;
        }
        let ms = retry_after::parse(retry_after?, now)?;
        Some(ms.min(self.max_retry_after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, idempotency_key: bool, replayable_body: bool) -> RequestKind<'_> {
        RequestKind {
            method,
            idempotency_key,
            replayable_body,
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
    fn statuses_and_hints() {
        let p = HttpPolicy::default();
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(p.fails(s));
        }
        for s in [200, 201, 301, 400, 401, 404, 413, 501] {
            assert!(!p.fails(s));
        }
        assert_eq!(p.hint(503, Some("2"), 0.0), Some(2000.0));
        assert_eq!(
            p.hint(429, Some("Thu, 01 Jan 1970 00:00:05 GMT"), 1000.0),
            Some(4000.0)
        );
        // A status whose hint is not followed, an absent or bad header.
        assert_eq!(p.hint(500, Some("2"), 0.0), None);
        assert_eq!(p.hint(503, None, 0.0), None);
        assert_eq!(p.hint(503, Some("soon"), 0.0), None);
    }

    #[test]
    fn max_retry_after_clamps() {
        let p = HttpPolicy {
            max_retry_after: 1500.0,
            ..HttpPolicy::default()
        };
        assert_eq!(p.hint(503, Some("3600"), 0.0), Some(1500.0));
        assert_eq!(p.hint(503, Some("1"), 0.0), Some(1000.0));
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
