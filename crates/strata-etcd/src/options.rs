//! [`EtcdOptions`]: where the cluster is, which namespace, timeouts, read consistency, paging,
//! and the server's limits; parsed from an `etcd://` URL or built in code.

use std::time::Duration;

use strata_lsm::{Error, Result};

/// How reads that are not pinned to a snapshot are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadConsistency {
    /// Confirmed with the leader (a quorum): never stale; unavailable without a quorum.
    #[default]
    Linearizable,
    /// Answered by whichever member receives the request: works without a quorum, but the
    /// answer may be stale (that member may lag or be cut off from the majority).
    Serializable,
}

/// Options of [`crate::EtcdEngine::connect`]. [`EtcdOptions::new`] gives the defaults;
/// [`EtcdOptions::from_url`] reads `etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?name=value&…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdOptions {
    /// Client endpoints, `HOST:PORT` (or full `http://` URLs).
    pub endpoints: Vec<String>,
    /// The database's name in the cluster: every key is stored under `PREFIX:`. Letters,
    /// digits and `. _ ~ / -` only; never empty. Two databases never see each other's keys,
    /// whatever their names (the `:` ends the namespace).
    pub prefix: String,
    /// Bound on one engine call: connecting, a read with its retries, a write. A call that
    /// cannot finish in time fails with a one-line error. URL `timeout=SECONDS`. Default 5 s.
    pub timeout: Duration,
    /// Consistency of reads that are not pinned to a snapshot. URL `reads=linearizable|
    /// serializable`. Default linearizable.
    pub reads: ReadConsistency,
    /// Most pairs fetched by one range request. URL `page=N`. Default 1000.
    pub page_items: usize,
    /// Target bytes per range response (pages shrink when values are large). Default 4 MiB.
    pub page_bytes: usize,
    /// Bound each range request to a window of the key space sized (from the counts etcd
    /// returns) to hold about one page, so that no request makes the server walk, read or
    /// sort the rest of a large range. URL `windows=0|1`. Default on.
    pub windows: bool,
    /// Ranges of at most this many keys are paged plainly (each request asks for the rest of
    /// the range: cheap while the rest is small); larger ones in windows. URL `window_min=N`.
    /// Default 4000.
    pub window_min: usize,
    /// The server's `--max-txn-ops` (default 128): most ops, and most conditions, in one batch.
    /// URL `max_txn_ops=N`.
    pub max_txn_ops: usize,
    /// The server's `--max-request-bytes` (default 1.5 MiB): most bytes in one request.
    /// URL `max_request_bytes=N`.
    pub max_request_bytes: usize,
    /// Largest response the client decodes (the gRPC default of 4 MiB is too small for large
    /// values or pages). Default 256 MiB.
    pub max_response_bytes: usize,
}

impl EtcdOptions {
    /// Defaults for `endpoints` and `prefix`.
    pub fn new(endpoints: Vec<String>, prefix: impl Into<String>) -> EtcdOptions {
        EtcdOptions {
            endpoints,
            prefix: prefix.into(),
            timeout: Duration::from_secs(5),
            reads: ReadConsistency::Linearizable,
            page_items: 1000,
            page_bytes: 4 << 20,
            windows: true,
            window_min: 4000,
            max_txn_ops: 128,
            max_request_bytes: 1536 * 1024,
            max_response_bytes: 256 << 20,
        }
    }

    /// Parses `etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?name=value&…]` (names: `timeout`,
    /// `reads`, `page`, `windows`, `window_min`, `max_txn_ops`, `max_request_bytes`).
    pub fn from_url(url: &str) -> Result<EtcdOptions> {
        let bad = |why: String| Error::InvalidArgument(format!("etcd URL {url:?}: {why}"));
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| bad("must start with etcd://".into()))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (hosts, prefix) = rest
            .split_once('/')
            .ok_or_else(|| bad("missing /PREFIX after the endpoints".into()))?;
        let endpoints: Vec<String> = hosts.split(',').map(str::to_owned).collect();
        for e in &endpoints {
            let ok = match e.rsplit_once(':') {
                Some((h, p)) => !h.is_empty() && p.parse::<u16>().is_ok(),
                None => false,
            };
            if !ok {
                return Err(bad(format!("endpoint {e:?} is not HOST:PORT")));
            }
        }
        let mut o = EtcdOptions::new(endpoints, prefix);
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            if pair.is_empty() {
                continue;
            }
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("option {pair:?} is not name=value")))?;
            let num = |what: &str| -> Result<u64> {
                value
                    .parse::<u64>()
                    .map_err(|_| bad(format!("{what} must be a whole number, got {value:?}")))
            };
            match name {
                "timeout" => {
                    let secs: f64 = value
                        .parse()
                        .ok()
                        .filter(|s: &f64| *s > 0.0 && s.is_finite())
                        .ok_or_else(|| {
                            bad(format!(
                                "timeout must be a positive number of seconds, got {value:?}"
                            ))
                        })?;
                    o.timeout = Duration::from_secs_f64(secs);
                }
                "reads" => {
                    o.reads = match value {
                        "linearizable" => ReadConsistency::Linearizable,
                        "serializable" => ReadConsistency::Serializable,
                        _ => {
                            return Err(bad(format!(
                                "reads must be linearizable or serializable, got {value:?}"
                            )))
                        }
                    }
                }
                "page" => o.page_items = num("page")? as usize,
                "windows" => o.windows = num("windows")? != 0,
                "window_min" => o.window_min = num("window_min")? as usize,
                "max_txn_ops" => o.max_txn_ops = num("max_txn_ops")? as usize,
                "max_request_bytes" => o.max_request_bytes = num("max_request_bytes")? as usize,
                _ => return Err(bad(format!("unknown option {name:?}"))),
            }
        }
        o.validate().map_err(|e| match e {
            Error::InvalidArgument(m) => bad(m),
            e => e,
        })?;
        Ok(o)
    }

    /// Checks the options; the error says which one is wrong.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(m.to_owned()));
        if self.endpoints.is_empty() || self.endpoints.iter().any(|e| e.is_empty()) {
            return bad("at least one endpoint is needed");
        }
        if self.prefix.is_empty() {
            return bad("the prefix (the database's name in the cluster) must not be empty");
        }
        if !self
            .prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~/-".contains(&b))
        {
            return bad("the prefix may hold only letters, digits and . _ ~ / -");
        }
        if self.page_items == 0 || self.page_bytes == 0 {
            return bad("page sizes must be positive");
        }
        if self.max_txn_ops == 0 || self.max_request_bytes < 1024 {
            return bad("max_txn_ops must be positive and max_request_bytes at least 1024");
        }
        if self.timeout.is_zero() {
            return bad("the timeout must be positive");
        }
        Ok(())
    }

    /// The bytes every key is stored under: the prefix and `:`.
    pub fn namespace(&self) -> Vec<u8> {
        let mut ns = self.prefix.as_bytes().to_vec();
        ns.push(b':');
        ns
    }

    /// The endpoints as URLs for the client.
    pub(crate) fn endpoint_urls(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .map(|e| {
                if e.starts_with("http://") || e.starts_with("https://") {
                    e.clone()
                } else {
                    format!("http://{e}")
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_url() {
        let o = EtcdOptions::from_url(
            "etcd://127.0.0.1:2379,h2:2380/app/db1?timeout=1.5&reads=serializable&page=50&windows=0&max_txn_ops=256&max_request_bytes=4194304",
        )
        .unwrap();
        assert_eq!(o.endpoints, vec!["127.0.0.1:2379", "h2:2380"]);
        assert_eq!(o.prefix, "app/db1");
        assert_eq!(o.timeout, Duration::from_millis(1500));
        assert_eq!(o.reads, ReadConsistency::Serializable);
        assert_eq!(o.page_items, 50);
        assert!(!o.windows);
        assert_eq!(o.max_txn_ops, 256);
        assert_eq!(o.max_request_bytes, 4 << 20);
        assert_eq!(o.namespace(), b"app/db1:");
    }

    #[test]
    fn refuses_bad_urls_with_the_reason() {
        for (url, why) in [
            ("http://h:1/x", "etcd://"),
            ("etcd://h:1", "missing /PREFIX"),
            ("etcd://h:1/", "must not be empty"),
            ("etcd://h/x", "HOST:PORT"),
            ("etcd://h:99999/x", "HOST:PORT"),
            ("etcd://h:1,/x", "HOST:PORT"),
            ("etcd://h:1/a:b", "only letters"),
            ("etcd://h:1/x?timeout=0", "timeout"),
            ("etcd://h:1/x?reads=fast", "reads"),
            ("etcd://h:1/x?nope=1", "unknown option"),
            ("etcd://h:1/x?page=0", "page sizes"),
            ("etcd://h:1/x?page", "name=value"),
        ] {
            let e = EtcdOptions::from_url(url).unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
        }
    }

    #[test]
    fn namespaces_never_nest() {
        // "a:" is not a prefix of "a/b:" nor of "ab:": two databases never share keys.
        let a = EtcdOptions::new(vec!["h:1".into()], "a").namespace();
        for other in ["a/b", "ab", "a-", "a.b"] {
            let o = EtcdOptions::new(vec!["h:1".into()], other).namespace();
            assert!(!o.starts_with(&a) && !a.starts_with(&o), "{other}");
        }
    }
}
