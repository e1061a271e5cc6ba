//! Typed reads of stored table items (`strata::from_item_bytes`, the serde deserializer behind
//! `get_as` / `query_as` / `scan_as`) take untrusted bytes: they never panic; whatever the
//! `Item` decoder accepts, the typed decoder accepts too; and a value read into a struct
//! writes back (`to_item_bytes`) to bytes that read back to the same value.
#![no_main]

use std::collections::BTreeMap;
use std::fmt;

use libfuzzer_sys::fuzz_target;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Serialize;

#[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
enum Kind {
    A,
    B(i16),
    C { x: Option<u8> },
}

#[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
struct Row {
    user: String,
    ts: i64,
    #[serde(default)]
    tags: Vec<Option<String>>,
    #[serde(default)]
    m: BTreeMap<String, (bool, u32)>,
    kind: Option<Kind>,
}

/// Accepts any attribute; counts what it saw.
struct Any(u64);

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Any, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Any;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("anything")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Any, E> {
                Ok(Any(1))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Any, A::Error> {
                let mut n = 1;
                while let Some(Any(k)) = a.next_element()? {
                    n += k;
                }
                Ok(Any(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Any, A::Error> {
                let mut n = 1;
                while let Some((_, Any(k))) = a.next_entry::<&str, Any>()? {
                    n += k;
                }
                Ok(Any(n))
            }
        }
        d.deserialize_any(V)
    }
}

fuzz_target!(|data: &[u8]| {
    let any = strata::from_item_bytes::<Any>(data);
    if strata::item_codec::decode_item(data).is_ok() {
        assert!(any.is_ok(), "{:?}", any.err());
    }
    let _ = strata::from_item_bytes::<de::IgnoredAny>(data);
    if let Ok(row) = strata::from_item_bytes::<Row>(data) {
        let bytes = strata::to_item_bytes(&row).expect("a row read back writes");
        assert_eq!(strata::from_item_bytes::<Row>(&bytes).expect("reads back"), row);
        // What the typed writer produces is a canonical item.
        let item = strata::item_codec::decode_item(&bytes).expect("an item");
        assert_eq!(strata::item_codec::encode_item(&item).unwrap(), bytes);
    }
});
