//! KeystoneDB keys: a partition key and an optional sort key, KeystoneDB's length-prefixed
//! encoding (for compatibility), its stripe function, and the order-preserving encoding Strata
//! stores instead.
//!
//! KeystoneDB (`kstone-core` 0.1.0, `types.rs`) encodes a key as
//! `u32be(len pk) ‖ pk ‖ u32be(len sk) ‖ sk`, with `sk_len = 0` for a missing sort key. The
//! book's chapter 5 gives the same layout. Two consequences, both tested:
//!
//! * `sk: None` and `sk: Some(b"")` encode to the same bytes; [`Key::decode`] returns `None`.
//! * Encoded keys sort by length first: `pk "b"` < `pk "aa"`, and under one partition
//!   `sk "b"` < `sk "aa"`. The book's claim that they "sort correctly" is false; DynamoDB
//!   orders sort keys by bytes. [`Key::encode_ordered`] gives the (pk, sk) byte order.
//!
//! The stripe of a key is `crc32(pk) % 256` (CRC-32/IEEE as `crc32fast`). The real values for
//! `user#1`, `user#2`, `user#3` are 154, 32 and 182; the book's 147, 89 and 201 are
//! illustrative.
//!
//! ```
//! use strata_key::keystone::Key;
//! let key = Key::with_sk("user#123", "post#001");
//! assert_eq!(key.stripe(), Key::new("user#123").stripe());
//! let bytes = key.encode().unwrap();
//! assert_eq!(&bytes[..4], &[0, 0, 0, 8]);
//! assert_eq!(Key::decode(&bytes).unwrap(), key);
//! ```

use std::borrow::Cow;
use std::num::NonZeroU32;

use crate::codec::native::{NativeCodec, Order};
use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
use crate::value::Value;

/// The number of stripes of KeystoneDB.
pub const STRIPES: u32 = 256;

/// Errors of KeystoneDB keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeystoneError {
    /// A key part is too long for the u32 length field.
    #[error("the {part} is {len} bytes; the KeystoneDB format allows at most 4294967295")]
    TooLong {
        /// `"partition key"` or `"sort key"`.
        part: &'static str,
        /// Its length.
        len: usize,
    },
    /// Bytes that are not a KeystoneDB length-prefixed key.
    #[error("keystone key decode error at byte {offset}: {reason}")]
    Decode {
        /// Byte offset in the input where decoding failed.
        offset: usize,
        /// What is wrong.
        reason: Cow<'static, str>,
    },
    /// The native codec refused the key.
    #[error("ordered encoding: {0}")]
    OrderedEncode(#[from] EncodeError),
    /// Bytes that the native codec does not decode.
    #[error("ordered decoding: {0}")]
    OrderedDecode(#[from] DecodeError),
    /// A native tuple that decodes but is not `(bytes)` or `(bytes, bytes)`.
    #[error("ordered decoding: {0}")]
    NotAKey(Cow<'static, str>),
}

/// A KeystoneDB key: partition key and optional sort key, both raw bytes.
///
/// The derived order is the tuple order `(pk, sk)` with bytes compared as bytes and a missing
/// sort key before every present one. [`Key::encode_ordered`] keeps exactly this order;
/// [`Key::encode`] does not.
///
/// ```
/// use strata_key::keystone::Key;
/// assert!(Key::new("aa") < Key::new("b"));
/// assert!(Key::new("a") < Key::with_sk("a", ""));
/// assert_eq!(Key::from(("user#1", "post#1")), Key::with_sk("user#1", "post#1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key {
    /// Partition key: picks the stripe.
    pub pk: Vec<u8>,
    /// Sort key: orders the items of one partition.
    pub sk: Option<Vec<u8>>,
}

fn u32_len(part: &'static str, bytes: &[u8]) -> Result<[u8; 4], KeystoneError> {
    u32::try_from(bytes.len())
        .map(u32::to_be_bytes)
        .map_err(|_| KeystoneError::TooLong {
            part,
            len: bytes.len(),
        })
}

fn read_u32(bytes: &[u8], pos: usize, what: &str) -> Result<usize, KeystoneError> {
    match bytes.get(pos..pos + 4) {
        Some(&[a, b, c, d]) => Ok(u32::from_be_bytes([a, b, c, d]) as usize),
        _ => Err(KeystoneError::Decode {
            offset: pos,
            reason: format!(
                "truncated {what} length: need 4 bytes, have {}",
                bytes.len().saturating_sub(pos)
            )
            .into(),
        }),
    }
}

fn read_part<'a>(
    bytes: &'a [u8],
    pos: usize,
    len: usize,
    what: &str,
) -> Result<&'a [u8], KeystoneError> {
    bytes
        .get(pos..)
        .and_then(|rest| rest.get(..len))
        .ok_or_else(|| KeystoneError::Decode {
            offset: pos,
            reason: format!(
                "{what} claims {len} bytes, only {} remain",
                bytes.len().saturating_sub(pos)
            )
            .into(),
        })
}

impl Key {
    /// A key with a partition key only.
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// assert_eq!(Key::new("user#1").pk, b"user#1");
    /// assert_eq!(Key::new(vec![0u8, 1]).sk, None);
    /// ```
    pub fn new(pk: impl Into<Vec<u8>>) -> Key {
        Key {
            pk: pk.into(),
            sk: None,
        }
    }

    /// A key with a partition key and a sort key.
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// let key = Key::with_sk(&b"user#1"[..], "post#1");
    /// assert_eq!(key.sk.as_deref(), Some(&b"post#1"[..]));
    /// ```
    pub fn with_sk(pk: impl Into<Vec<u8>>, sk: impl Into<Vec<u8>>) -> Key {
        Key {
            pk: pk.into(),
            sk: Some(sk.into()),
        }
    }

    /// KeystoneDB's encoding: `u32be(len pk) ‖ pk ‖ u32be(len sk) ‖ sk`, with a zero length for
    /// a missing sort key. Errors only for a part longer than `u32::MAX` bytes (KeystoneDB
    /// truncates the length silently).
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// assert_eq!(
    ///     Key::new("user#123").encode().unwrap(),
    ///     b"\x00\x00\x00\x08user#123\x00\x00\x00\x00"
    /// );
    /// ```
    pub fn encode(&self) -> Result<Vec<u8>, KeystoneError> {
        let pk_len = u32_len("partition key", &self.pk)?;
        let sk = self.sk.as_deref().unwrap_or_default();
        let sk_len = u32_len("sort key", sk)?;
        let mut out = Vec::with_capacity(8 + self.pk.len() + sk.len());
        out.extend_from_slice(&pk_len);
        out.extend_from_slice(&self.pk);
        out.extend_from_slice(&sk_len);
        out.extend_from_slice(sk);
        Ok(out)
    }

    /// Decodes KeystoneDB's encoding. A zero sort-key length gives `sk: None` (as KeystoneDB).
    /// Unlike KeystoneDB, which ignores them, trailing bytes are an error, so a key has exactly
    /// one encoding besides the `None`/`Some("")` one.
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// let key = Key::decode(b"\x00\x00\x00\x01a\x00\x00\x00\x01b").unwrap();
    /// assert_eq!(key, Key::with_sk("a", "b"));
    /// assert!(Key::decode(b"\x00\x00\x00\x05a").is_err());
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Key, KeystoneError> {
        let pk_len = read_u32(bytes, 0, "partition key")?;
        let pk = read_part(bytes, 4, pk_len, "partition key")?;
        let sk_pos = 4 + pk.len();
        let sk_len = read_u32(bytes, sk_pos, "sort key")?;
        let sk = read_part(bytes, sk_pos + 4, sk_len, "sort key")?;
        let end = sk_pos + 4 + sk.len();
        if end != bytes.len() {
            return Err(KeystoneError::Decode {
                offset: end,
                reason: format!("{} trailing bytes after the sort key", bytes.len() - end).into(),
            });
        }
        Ok(Key {
            pk: pk.to_vec(),
            sk: (!sk.is_empty()).then(|| sk.to_vec()),
        })
    }

    /// KeystoneDB's stripe of this key: `crc32(pk) % 256`. The sort key plays no part, so a
    /// partition lives in one stripe.
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// assert_eq!(Key::new("user#1").stripe(), 154);
    /// assert_eq!(Key::with_sk("user#1", "post#9").stripe(), 154);
    /// ```
    pub fn stripe(&self) -> u8 {
        stripe(&self.pk)
    }

    /// Strata's order-preserving encoding: the native tuple `(Bytes(pk), Bytes(sk))`, or
    /// `(Bytes(pk))` without a sort key. Byte order of the encodings equals the order of
    /// [`Key`].
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// let (b, aa) = (Key::new("b"), Key::new("aa"));
    /// assert!(aa.encode_ordered().unwrap() < b.encode_ordered().unwrap());
    /// assert!(aa.encode().unwrap() > b.encode().unwrap()); // length first
    /// ```
    pub fn encode_ordered(&self) -> Result<Vec<u8>, KeystoneError> {
        let mut tuple = Vec::with_capacity(2);
        tuple.push(Value::Bytes(self.pk.clone()));
        if let Some(sk) = &self.sk {
            tuple.push(Value::Bytes(sk.clone()));
        }
        Ok(NativeCodec::new().encode(&tuple)?)
    }

    /// Decodes [`Key::encode_ordered`]'s bytes: a native tuple of one or two ascending byte
    /// strings. Anything else (other kinds, descending elements, other lengths) is an error, so
    /// only [`Key::encode_ordered`]'s output decodes.
    ///
    /// ```
    /// use strata_key::keystone::Key;
    /// let key = Key::with_sk("user#1", "post#1");
    /// assert_eq!(Key::decode_ordered(&key.encode_ordered().unwrap()).unwrap(), key);
    /// ```
    pub fn decode_ordered(bytes: &[u8]) -> Result<Key, KeystoneError> {
        // Both elements must be ascending: the native decoder alone would also accept
        // descending ones, a second encoding of the same key.
        let codec = NativeCodec::with_orders(vec![Order::default(); 2]);
        let tuple = codec.decode(bytes)?.into_vec();
        if tuple.is_empty() || tuple.len() > 2 {
            return Err(KeystoneError::NotAKey(
                format!("{} elements; expected (pk) or (pk, sk)", tuple.len()).into(),
            ));
        }
        let mut parts = Vec::with_capacity(2);
        for (index, value) in tuple.into_iter().enumerate() {
            match value {
                Value::Bytes(b) => parts.push(b),
                other => {
                    return Err(KeystoneError::NotAKey(
                        format!("element {index} is {}, expected bytes", other.kind()).into(),
                    ))
                }
            }
        }
        let sk = if parts.len() == 2 { parts.pop() } else { None };
        let pk = parts.pop().unwrap_or_default();
        Ok(Key { pk, sk })
    }
}

/// KeystoneDB's stripe of a partition key: `crc32(pk) % 256`.
///
/// ```
/// assert_eq!(strata_key::keystone::stripe(b"user#2"), 32);
/// ```
pub fn stripe(pk: &[u8]) -> u8 {
    (crc32fast::hash(pk) % STRIPES) as u8
}

/// The stripe of a partition key among `stripes` stripes: `crc32(pk) % stripes`. With 256 it
/// equals [`stripe`].
///
/// ```
/// use std::num::NonZeroU32;
/// use strata_key::keystone::stripe_of;
/// let n = NonZeroU32::new(16).unwrap();
/// assert!(stripe_of(b"user#3", n) < 16);
/// assert_eq!(stripe_of(b"user#3", NonZeroU32::new(256).unwrap()), 182);
/// ```
pub fn stripe_of(pk: &[u8], stripes: NonZeroU32) -> u32 {
    crc32fast::hash(pk) % stripes.get()
}

impl From<&str> for Key {
    fn from(pk: &str) -> Key {
        Key::new(pk)
    }
}

impl From<&[u8]> for Key {
    fn from(pk: &[u8]) -> Key {
        Key::new(pk)
    }
}

impl From<(&str, &str)> for Key {
    fn from((pk, sk): (&str, &str)) -> Key {
        Key::with_sk(pk, sk)
    }
}

impl From<(&[u8], &[u8])> for Key {
    fn from((pk, sk): (&[u8], &[u8])) -> Key {
        Key::with_sk(pk, sk)
    }
}
