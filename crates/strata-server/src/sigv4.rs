//! AWS Signature Version 4 verification of a request (the `Authorization: AWS4-HMAC-SHA256 ...`
//! header every AWS SDK sends), for servers configured with a key pair.
//!
//! The canonical request, string to sign and signing key follow AWS's published algorithm;
//! the comparison of signatures is constant-time (`hmac`'s `verify_slice`).

use hmac::{Hmac, Mac};
use hyper::http::request::Parts;
use sha2::{Digest, Sha256};

use crate::fault::{Fault, FaultKind};

type HmacSha256 = Hmac<Sha256>;

/// A key pair that requests must be signed with.
#[derive(Clone)]
pub struct Credentials {
    /// The access key id (`AKIA...` or any string without `/`).
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .finish()
    }
}

/// How far the request's `X-Amz-Date` may be from the server's clock (AWS: 15 minutes).
pub const MAX_CLOCK_SKEW_SECS: i64 = 15 * 60;

/// The parts of an `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
/// Signature=...` header.
#[derive(Debug, PartialEq)]
struct AuthHeader<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn incomplete(message: impl Into<String>) -> Fault {
    Fault::new(FaultKind::IncompleteSignature, message)
}

fn invalid(message: impl Into<String>) -> Fault {
    Fault::new(FaultKind::InvalidSignature, message)
}

fn parse_auth(value: &str) -> Result<AuthHeader<'_>, Fault> {
    let rest = value.trim();
    let Some(rest) = rest.strip_prefix("AWS4-HMAC-SHA256") else {
        let algorithm = rest.split_whitespace().next().unwrap_or("");
        return Err(incomplete(format!(
            "Unsupported AWS 'algorithm': '{algorithm}' (only AWS4-HMAC-SHA256 for now)"
        )));
    };
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let part = part.trim();
        let Some((k, v)) = part.split_once('=') else {
            return Err(incomplete(format!(
                "'{part}' not a valid key=value pair (missing equal-sign) in Authorization header"
            )));
        };
        match k.trim() {
            "Credential" => credential = Some(v.trim()),
            "SignedHeaders" => signed = Some(v.trim()),
            "Signature" => signature = Some(v.trim()),
            _ => {}
        }
    }
    let mut missing = String::new();
    for (name, v) in [
        ("Credential", credential),
        ("Signature", signature),
        ("SignedHeaders", signed),
    ] {
        if v.is_none() {
            missing.push_str(&format!(
                "Authorization header requires '{name}' parameter. "
            ));
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature) else {
        return Err(incomplete(missing.trim_end().to_string()));
    };
    let scope: Vec<&str> = credential.trim_end_matches('/').split('/').collect();
    if scope.len() != 5 {
        return Err(incomplete(format!(
            "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '{credential}'"
        )));
    }
    if scope[4] != "aws4_request" {
        return Err(invalid(format!(
            "Credential should be scoped with a valid terminator: 'aws4_request', not '{}'.",
            scope[4]
        )));
    }
    Ok(AuthHeader {
        access_key_id: scope[0],
        date: scope[1],
        region: scope[2],
        service: scope[3],
        signed_headers: signed.split(';').collect(),
        signature,
    })
}

/// AWS's URI encoding: unreserved characters kept, everything else `%XX` (upper-case hex).
fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/');
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (and leaves malformed ones as they are).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if let Some(Ok(v)) = s.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16)) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn canonical_query(query: Option<&str>) -> String {
    let Some(q) = query.filter(|q| !q.is_empty()) else {
        return String::new();
    };
    let mut pairs: Vec<(String, String)> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The header's value as SigV4 canonicalises it: trimmed, inner runs of spaces collapsed,
/// several occurrences joined with `,`.
fn canonical_header_value(parts: &Parts, name: &str) -> Option<String> {
    let values: Vec<String> = parts
        .headers
        .get_all(name)
        .iter()
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if values.is_empty() {
        None
    } else {
        Some(values.join(","))
    }
}

/// Seconds since 1970 of an ISO 8601 basic UTC time, `YYYYMMDDTHHMMSSZ`.
fn parse_amz_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        if !t.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (proleptic Gregorian), H. Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length; new_from_slice cannot fail for it.
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Verifies the SigV4 signature of a request (`parts` + `body`) against `creds`, at time
/// `now` (seconds since 1970). Errors are DynamoDB's: `MissingAuthenticationTokenException`,
/// `IncompleteSignatureException`, `UnrecognizedClientException`, `InvalidSignatureException`.
pub fn verify(parts: &Parts, body: &[u8], creds: &Credentials, now: i64) -> Result<(), Fault> {
    let Some(auth) = parts.headers.get(hyper::header::AUTHORIZATION) else {
        return Err(Fault::new(
            FaultKind::MissingAuthenticationToken,
            "Request is missing Authentication Token",
        ));
    };
    let auth = auth
        .to_str()
        .map_err(|_| incomplete("Authorization header is not ASCII"))?;
    let a = parse_auth(auth)?;
    let amz_date = canonical_header_value(parts, "x-amz-date").ok_or_else(|| {
        incomplete(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
        )
    })?;
    let when = parse_amz_date(&amz_date).ok_or_else(|| {
        incomplete(format!(
            "Date must be in ISO-8601 'basic format'. Got '{amz_date}'."
        ))
    })?;
    if (now - when).abs() > MAX_CLOCK_SKEW_SECS {
        return Err(invalid(format!(
            "Signature expired or not yet valid: {amz_date} is more than 15 minutes from the server's time."
        )));
    }
    if a.date != &amz_date[..8] {
        return Err(invalid(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{}', from '{amz_date}'.",
            a.date,
            &amz_date[..8]
        )));
    }
    if a.service != "dynamodb" {
        return Err(invalid(
            "Credential should be scoped to correct service: 'dynamodb'.",
        ));
    }
    if !a.signed_headers.contains(&"host") {
        return Err(invalid(
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }
    if a.access_key_id != creds.access_key_id {
        return Err(Fault::new(
            FaultKind::UnrecognizedClient,
            "The security token included in the request is invalid.",
        ));
    }
    let mut canonical_headers = String::new();
    for h in &a.signed_headers {
        let v = canonical_header_value(parts, h).unwrap_or_default();
        canonical_headers.push_str(h);
        canonical_headers.push(':');
        canonical_headers.push_str(&v);
        canonical_headers.push('\n');
    }
    let payload_hash = match canonical_header_value(parts, "x-amz-content-sha256") {
        Some(h) if h != "UNSIGNED-PAYLOAD" => {
            let actual = hex::encode(Sha256::digest(body));
            if !h.eq_ignore_ascii_case(&actual) {
                return Err(invalid(
                    "The provided 'x-amz-content-sha256' header does not match what was computed.",
                ));
            }
            h
        }
        Some(h) => h,
        None => hex::encode(Sha256::digest(body)),
    };
    let path = parts.uri.path();
    let path = if path.is_empty() { "/" } else { path };
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        parts.method.as_str(),
        uri_encode(path, true),
        canonical_query(parts.uri.query()),
        canonical_headers,
        a.signed_headers.join(";"),
        payload_hash
    );
    let scope = format!("{}/{}/{}/aws4_request", a.date, a.region, a.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let k_date = hmac(
        format!("AWS4{}", creds.secret_access_key).as_bytes(),
        a.date.as_bytes(),
    );
    let k_region = hmac(&k_date, a.region.as_bytes());
    let k_service = hmac(&k_region, a.service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let given = hex::decode(a.signature).map_err(|_| signature_mismatch())?;
    let mut mac = HmacSha256::new_from_slice(&k_signing).expect("HMAC accepts any key length");
    mac.update(string_to_sign.as_bytes());
    mac.verify_slice(&given).map_err(|_| signature_mismatch())
}

fn signature_mismatch() -> Fault {
    invalid(
        "The request signature we calculated does not match the signature you provided. \
         Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests signed by botocore's `SigV4Auth` (`vectors/sigv4-botocore.json`, made by
    /// `tools/sigv4-botocore/gen.py`).
    type Case = (String, Parts, Vec<u8>);

    fn vectors() -> (Credentials, i64, Vec<Case>) {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../../vectors/sigv4-botocore.json")).unwrap();
        let creds = Credentials {
            access_key_id: v["access_key_id"].as_str().unwrap().into(),
            secret_access_key: v["secret_access_key"].as_str().unwrap().into(),
        };
        let cases = v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut b = hyper::Request::builder()
                    .method(c["method"].as_str().unwrap())
                    .uri(c["uri"].as_str().unwrap());
                for h in c["headers"].as_array().unwrap() {
                    b = b.header(h[0].as_str().unwrap(), h[1].as_str().unwrap());
                }
                let body = hex::decode(c["body_hex"].as_str().unwrap()).unwrap();
                let name = c["name"].as_str().unwrap().to_string();
                (name, b.body(()).unwrap().into_parts().0, body)
            })
            .collect();
        (creds, v["now_unix"].as_i64().unwrap(), cases)
    }

    #[test]
    fn amz_date() {
        assert_eq!(parse_amz_date("20240101T000000Z"), Some(1_704_067_200));
        assert_eq!(parse_amz_date("19700101T000001Z"), Some(1));
        assert_eq!(parse_amz_date("20000229T120000Z"), Some(951_825_600));
        assert_eq!(parse_amz_date("2024-01-01T00:00:00Z"), None);
        assert_eq!(parse_amz_date("20241301T000000Z"), None);
        assert_eq!(parse_amz_date("2024010+T000000Z"), None);
        assert_eq!(parse_amz_date("2024010\u{e9}000000Z"), None);
    }

    #[test]
    fn botocore_signatures_verify() {
        let (creds, now, cases) = vectors();
        assert!(cases.len() >= 6);
        for (name, parts, body) in &cases {
            verify(parts, body, &creds, now).unwrap_or_else(|e| panic!("{name}: {e}"));
            verify(parts, body, &creds, now + 14 * 60).unwrap();
        }
    }

    #[test]
    fn any_change_fails() {
        let (creds, now, cases) = vectors();
        let (_, parts, body) = &cases[0];
        let other_secret = Credentials {
            secret_access_key: "other".into(),
            ..creds.clone()
        };
        let e = verify(parts, body, &other_secret, now).unwrap_err();
        assert_eq!(e.kind, FaultKind::InvalidSignature);
        let e = verify(parts, b"{}", &creds, now).unwrap_err();
        assert_eq!(e.kind, FaultKind::InvalidSignature);
        let mut p2 = parts.clone();
        p2.headers.insert(
            "x-amz-target",
            "DynamoDB_20120810.DeleteTable".parse().unwrap(),
        );
        assert_eq!(
            verify(&p2, body, &creds, now).unwrap_err().kind,
            FaultKind::InvalidSignature
        );
        let mut p3 = parts.clone();
        p3.uri = "/?x=1".parse().unwrap();
        assert_eq!(
            verify(&p3, body, &creds, now).unwrap_err().kind,
            FaultKind::InvalidSignature
        );
        let other_key = Credentials {
            access_key_id: "OTHER".into(),
            ..creds.clone()
        };
        let e = verify(parts, body, &other_key, now).unwrap_err();
        assert_eq!(e.kind, FaultKind::UnrecognizedClient);
        for skew in [16 * 60, -16 * 60] {
            let e = verify(parts, body, &creds, now + skew).unwrap_err();
            assert_eq!(e.kind, FaultKind::InvalidSignature);
            assert!(e.message.contains("expired"));
        }
    }

    #[test]
    fn missing_and_malformed_headers() {
        let (creds, now, cases) = vectors();
        let (_, parts, body) = &cases[0];
        let mut bare = parts.clone();
        bare.headers.remove("authorization");
        let e = verify(&bare, body, &creds, now).unwrap_err();
        assert_eq!(e.kind, FaultKind::MissingAuthenticationToken);
        for bad in [
            "AWS4-HMAC-SHA1 Credential=a/b/c/d/e, SignedHeaders=host, Signature=00",
            "AWS4-HMAC-SHA256 Credential=a/b/c/d, SignedHeaders=host, Signature=00",
            "AWS4-HMAC-SHA256 SignedHeaders=host, Signature=00",
            "AWS4-HMAC-SHA256 Credential",
            "",
        ] {
            let mut p = bare.clone();
            p.headers.insert("authorization", bad.parse().unwrap());
            let e = verify(&p, body, &creds, now).unwrap_err();
            assert_eq!(e.kind, FaultKind::IncompleteSignature, "{bad}: {e}");
        }
        let mut p = bare.clone();
        p.headers.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=x-amz-date, Signature=00"
                .parse()
                .unwrap(),
        );
        let e = verify(&p, body, &creds, now).unwrap_err();
        assert!(e.message.contains("Host"), "{e}");
        let mut p = bare.clone();
        p.headers.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=zz"
                .parse()
                .unwrap(),
        );
        let e = verify(&p, body, &creds, now).unwrap_err();
        assert_eq!(e.kind, FaultKind::InvalidSignature);
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(uri_encode("/a b/~x", true), "/a%20b/~x");
        assert_eq!(canonical_query(Some("b=2&a=1&a=0")), "a=0&a=1&b=2");
        assert_eq!(canonical_query(Some("x=%2F")), "x=%2F");
        assert_eq!(percent_decode("%41%4"), "A%4");
        assert_eq!(percent_decode("%\u{e9}x"), "%\u{e9}x");
    }
}
