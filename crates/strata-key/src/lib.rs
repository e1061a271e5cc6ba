//! # strata-key
//!
//! Keys are typed tuples, and their byte encodings keep their order.
//!
//! * [`Value`] and [`Tuple`]: the typed key model, with one total order.
//! * [`codec`]: tuple codecs behind one trait, [`TupleCodec`]: `native` (the default of
//!   Strata), `centidb`, `fdb` and `skv`.
//! * [`range`]: prefix ranges and key successors on raw bytes.
//!
//! ```
//! use strata_key::{tuple, Value};
//! let t = tuple!(1, "user", true);
//! assert_eq!(t.len(), 3);
//! assert_eq!(t[1], Value::from("user"));
//! ```

mod capture;
pub mod codec;
pub mod decimal;
pub mod error;
pub mod json;
pub mod keystone;
pub mod namespace;
pub mod range;
pub mod serde_uuid;
pub mod time;
pub mod value;

pub use codec::native_serde::{from_key, to_key, KeySerdeError, KeySerdeErrorKind};
pub use codec::TupleCodec;
pub use decimal::{Decimal, DecimalError};
pub use error::{DecodeError, EncodeError};
pub use time::Time;
pub use value::{Kind, Tuple, Value, MAX_DEPTH};
