//! The fast key paths of puts (typed keys captured while serializing; item keys encoded in
//! place, the partition encoded once) against the reference: `key_of` the decoded item, then
//! `item_key(partition_hash(partition), partition, sort)`.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::ser::{Serialize, SerializeMap, Serializer};
use strata_key::{Kind, Value};

use crate::item_codec::decode_item;
use crate::item_serde::to_item_bytes;
use crate::schema::{KeyField, TableSchema};
use crate::{Db, Item, Key, Table};

/// An attribute value of a test row (serializes through every shape a key attribute can
/// take, and some it cannot).
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Big(i128),
    F(f64),
    Text(String),
    Bytes(Vec<u8>),
    List(Vec<J>),
    Map(BTreeMap<String, J>),
}

impl Serialize for J {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            J::Null => s.serialize_unit(),
            J::Bool(b) => s.serialize_bool(*b),
            J::Int(i) => s.serialize_i64(*i),
            J::Big(i) => s.serialize_i128(*i),
            J::F(f) => s.serialize_f64(*f),
            J::Text(t) => s.serialize_str(t),
            J::Bytes(b) => s.serialize_bytes(b),
            J::List(l) => l.serialize(s),
            J::Map(m) => m.serialize(s),
        }
    }
}

/// A row: attributes in the given order (not sorted, names may repeat), as a struct's fields
/// come.
#[derive(Debug, Clone)]
struct Row(Vec<(String, J)>);

impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A row as an enum variant with data: `{variant: row}` at the top.
struct Variant(Row);

impl Serialize for Variant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_variant("V", 0, "a", &self.0)
    }
}

fn value_of(kind: Kind) -> BoxedStrategy<J> {
    match kind {
        Kind::Text => ".{0,12}".prop_map(J::Text).boxed(),
        Kind::Int => prop_oneof![
            any::<i64>().prop_map(J::Int),
            (-300i64..300).prop_map(J::Int),
            any::<i128>().prop_map(J::Big),
        ]
        .boxed(),
        Kind::Bytes => proptest::collection::vec(any::<u8>(), 0..12)
            .prop_map(J::Bytes)
            .boxed(),
        Kind::Bool => any::<bool>().prop_map(J::Bool).boxed(),
        _ => any::<f64>().prop_map(J::F).boxed(),
    }
}

fn any_value() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        value_of(Kind::Text),
        value_of(Kind::Int),
        value_of(Kind::Bytes),
        value_of(Kind::Bool),
        value_of(Kind::Float),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(J::List),
            proptest::collection::btree_map("[a-c]{1,2}", inner, 0..3).prop_map(J::Map),
        ]
    })
}

fn field() -> impl Strategy<Value = (Kind, bool, bool)> {
    (
        prop_oneof![
            Just(Kind::Text),
            Just(Kind::Int),
            Just(Kind::Bytes),
            Just(Kind::Bool),
            Just(Kind::Float)
        ],
        any::<bool>(),
        any::<bool>(),
    )
}

/// A schema of 1–3 partition and 0–3 sort fields named from `a`… and a row for it: each key
/// attribute usually of its kind, sometimes NULL, of another kind, nested, absent or given
/// twice, plus other attributes, in a random order.
fn schema_and_row() -> impl Strategy<Value = (TableSchema, Row)> {
    (
        proptest::collection::vec(field(), 1..4),
        proptest::collection::vec(field(), 0..4),
    )
        .prop_flat_map(|(p, s)| {
            let names = ["user", "a", "ts", "b", "zz", "c"];
            let mk = |i: usize, (kind, desc, nl): (Kind, bool, bool)| {
                let mut f = KeyField::new(names[i], kind);
                if desc {
                    f = f.desc();
                }
                if nl {
                    f = f.nulls_last();
                }
                f
            };
            let np = p.len();
            let partition: Vec<KeyField> = p.into_iter().enumerate().map(|(i, f)| mk(i, f)).collect();
            let sort: Vec<KeyField> = s
                .into_iter()
                .enumerate()
                .map(|(i, f)| mk(np + i, f))
                .collect();
            let schema = TableSchema::new("t", partition).with_sort(sort);
            let attrs: Vec<BoxedStrategy<Vec<(String, J)>>> = schema
                .key_fields()
                .map(|f| {
                    let name = f.name.clone();
                    let n2 = name.clone();
                    prop_oneof![
                        20 => value_of(f.kind).prop_map(move |v| vec![(name.clone(), v)]),
                        2 => Just(vec![(n2.clone(), J::Null)]),
                        1 => any_value().prop_map({ let n = n2.clone(); move |v| vec![(n.clone(), v)] }),
                        1 => Just(vec![]),
                        1 => Just(vec![(n2.clone(), J::Int(1)), (n2.clone(), J::Int(2))]),
                    ]
                    .boxed()
                })
                .collect();
            let extra = proptest::collection::vec(("[a-z]{0,3}", any_value()), 0..3);
            (Just(schema), attrs, extra, any::<proptest::sample::Index>())
        })
        .prop_map(|(schema, attrs, extra, rot)| {
            let mut row: Vec<(String, J)> = attrs.into_iter().flatten().collect();
            for (k, v) in extra {
                if !schema.is_key_attribute(&k) && !row.iter().any(|(n, _)| *n == k) {
                    row.push((k, v));
                }
            }
            let n = row.len();
            if n > 0 {
                row.rotate_left(rot.index(n));
            }
            (schema, Row(row))
        })
}

/// The reference key of an item: `key_of`, then the layout's two-pass encoding.
fn reference_key(t: &Table, item: &Item) -> crate::Result<Vec<u8>> {
    let key = t.key_of(item)?;
    let layout = &t.def.layout;
    let h = layout.partition_hash(&key.partition)?;
    layout.item_key(h, &key.partition, &key.sort)
}

fn same<T: PartialEq + std::fmt::Debug>(
    got: crate::Result<T>,
    want: &crate::Result<T>,
) -> Result<(), TestCaseError> {
    match (got, want) {
        (Ok(a), Ok(b)) => prop_assert_eq!(&a, b),
        (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
        (a, b) => prop_assert!(false, "got {:?}, want {:?}", a, b),
    }
    Ok(())
}

/// Typed puts: the key built from the attributes the serializer recorded is the reference key
/// of the item its bytes decode to (or the same error), for random schemas (descending and
/// nulls-last fields, several kinds) and rows in any attribute order; the item path and
/// `encode_key` agree with the reference too.
#[test]
fn typed_keys_are_item_keys() {
    let db = Db::memory().unwrap();
    let n = std::cell::Cell::new(0u32);
    let mut runner = TestRunner::new(Config::with_cases(400));
    runner
        .run(&schema_and_row(), |(mut schema, row)| {
            n.set(n.get() + 1);
            schema.name = format!("t{}", n.get());
            let t = db.create_table(schema).unwrap();
            let typed = t.encode_value(&row);
            let bytes = match to_item_bytes(&row) {
                Ok(b) => b,
                Err(e) => {
                    // Refused by the serializer (a name given twice): the typed put says so.
                    let err = typed.unwrap_err().to_string();
                    prop_assert!(err.contains(&e.to_string()), "{} / {}", err, e);
                    return Ok(());
                }
            };
            let item = decode_item(&bytes).unwrap();
            let want = reference_key(&t, &item);
            same(
                typed.map(|(k, v)| {
                    assert_eq!(v, bytes);
                    k
                }),
                &want,
            )?;
            same(t.encode_item(&item).map(|(k, _)| k), &want)?;
            if let Ok(key) = t.key_of(&item) {
                same(t.encode_key(&key).map(|k| k.bytes), &want)?;
            }
            // An enum variant with data puts `{a: row}` at the top: the fallback path.
            let wrapped = Variant(row.clone());
            if let Ok(b) = to_item_bytes(&wrapped) {
                let item = decode_item(&b).unwrap();
                same(
                    t.encode_value(&wrapped).map(|(k, _)| k),
                    &reference_key(&t, &item),
                )?;
            }
            Ok(())
        })
        .unwrap();
}

/// Point reads build their key in the thread's reused buffer (`with_key_bytes`): for random
/// schemas and keys, one after another on one thread (longer and shorter keys in turn), its
/// bytes are the reference key's, and a key that does not fit the schema (a value left out, a
/// value of another kind) fails as `encode_key` fails. A read nested inside the first (as a
/// caller's `Deserialize` may do) gets its own key right and leaves the outer key's bytes
/// alone.
#[test]
fn point_read_keys_are_reference_keys() {
    let db = Db::memory().unwrap();
    let n = std::cell::Cell::new(0u32);
    let prev: std::cell::RefCell<Option<(Table, Key, Vec<u8>)>> = Default::default();
    let mut runner = TestRunner::new(Config::with_cases(400));
    runner
        .run(&schema_and_row(), |(mut schema, row)| {
            n.set(n.get() + 1);
            schema.name = format!("t{}", n.get());
            let t = db.create_table(schema).unwrap();
            let Ok(bytes) = to_item_bytes(&row) else {
                return Ok(());
            };
            let item = decode_item(&bytes).unwrap();
            let Ok(key) = t.key_of(&item) else {
                return Ok(());
            };
            let want = reference_key(&t, &item).map_err(|e| e.to_string());
            let got = t.with_key_bytes(&key, |k| {
                let outer = k.to_vec();
                // A nested read, with the previous case's key (another table, another length).
                if let Some((pt, pk, pbytes)) = &*prev.borrow() {
                    let inner = pt.with_key_bytes(pk, |k2| Ok(k2.to_vec())).unwrap();
                    assert_eq!(&inner, pbytes);
                }
                assert_eq!(k, &outer[..]);
                Ok(outer)
            });
            prop_assert_eq!(got.map_err(|e| e.to_string()), want.clone());
            if let Ok(w) = want {
                *prev.borrow_mut() = Some((t.clone(), key.clone(), w));
            }
            // Keys that do not fit: the same error as `encode_key`.
            let mut short = key.clone();
            if short.sort.pop().is_none() {
                short.partition.pop();
            }
            let mut wrong = key.clone();
            wrong.partition[0] = match wrong.partition[0] {
                Value::Int(_) => Value::from("x"),
                _ => Value::Int(1),
            };
            for bad in [short, wrong] {
                let got = t.with_key_bytes(&bad, |k| Ok(k.to_vec()));
                prop_assert_eq!(
                    got.map_err(|e| e.to_string()),
                    t.encode_key(&bad)
                        .map(|k| k.bytes)
                        .map_err(|e| e.to_string())
                );
            }
            // And the reads themselves: absent, then present.
            prop_assert!(t.get(&key).unwrap().is_none());
            if t.put(&item).is_ok() {
                prop_assert!(t.get(&key).unwrap().is_some());
            }
            Ok(())
        })
        .unwrap();
}

/// A struct in declaration order (not name order), ascending and descending keys.
#[test]
fn typed_struct_keys_are_item_keys() {
    #[derive(serde::Serialize)]
    struct Post {
        user: String,
        ts: i64,
        body: String,
        n: Option<i64>,
    }
    let db = Db::memory().unwrap();
    for (i, desc) in [false, true].into_iter().enumerate() {
        let mut ts = KeyField::new("ts", Kind::Int);
        if desc {
            ts = ts.desc().nulls_last();
        }
        let t = db
            .create_table(
                TableSchema::new(format!("p{i}"), vec![KeyField::new("user", Kind::Text)])
                    .with_sort(vec![ts]),
            )
            .unwrap();
        for (u, ts, n) in [("u1", 5, None), ("", -1, Some(3)), ("ü", i64::MIN, Some(0))] {
            let p = Post {
                user: u.into(),
                ts,
                body: "x".repeat(70),
                n,
            };
            let (k, v) = t.encode_value(&p).unwrap();
            let item = decode_item(&v).unwrap();
            assert_eq!(k, reference_key(&t, &item).unwrap());
            let key = Key::new(vec![Value::from(u)], vec![Value::Int(ts.into())]);
            assert_eq!(k, t.encode_key(&key).unwrap().bytes);
        }
    }
}

/// Struct rows of several types put into tables of other key fields, in any mix: the
/// serializer keeps, per struct type, a guess of which fields hold the key attributes (checked
/// by name), so a type put into a table whose key fields are other fields, or in other places,
/// or missing from the type, or more than it guesses, must not take a stale guess. Each typed
/// key is the reference key of its item (or the same error), through `encode_value` and
/// through one `Batch`.
#[test]
fn struct_rows_in_tables_of_other_keys_are_item_keys() {
    #[derive(serde::Serialize)]
    struct A {
        user: String,
        ts: i64,
        body: String,
        n: i64,
    }
    #[derive(serde::Serialize)]
    struct B {
        n: i64,
        user: String,
        body: String,
        ts: i64,
    }
    #[derive(serde::Serialize)]
    struct C {
        ts: i64,
        body: String,
    }
    #[derive(serde::Serialize)]
    struct D {
        x: i64,
        n: i64,
        body: String,
        ts: i64,
        user: String,
    }
    let text = |n: &str| KeyField::new(n, Kind::Text);
    let int = |n: &str| KeyField::new(n, Kind::Int);
    let db = Db::memory().unwrap();
    let schemas = [
        TableSchema::new("t0", vec![text("user")]).with_sort(vec![int("ts")]),
        TableSchema::new("t1", vec![text("body")]).with_sort(vec![int("n")]),
        TableSchema::new("t2", vec![int("n")]).with_sort(vec![text("user")]),
        TableSchema::new("t3", vec![text("user")]).with_sort(vec![
            int("ts"),
            int("n"),
            text("body"),
        ]),
        TableSchema::new("t4", vec![int("x"), text("user")]).with_sort(vec![
            int("ts"),
            int("n"),
            text("body").desc(),
        ]),
        TableSchema::new("t5", vec![int("ts")]),
    ];
    let tables: Vec<Table> = schemas
        .into_iter()
        .map(|s| db.create_table(s).unwrap())
        .collect();
    let steps =
        proptest::collection::vec((0u8..4, 0..tables.len(), any::<i64>(), "[a-c]{0,3}"), 1..40);
    let mut runner = TestRunner::new(Config::with_cases(300));
    runner
        .run(&steps, |steps| {
            let mut batch = crate::Batch::new();
            let mut want_ops = Vec::new();
            for (kind, ti, v, s) in steps {
                let t = &tables[ti];
                let (typed, bytes, put) = match kind {
                    0 => {
                        let r = A {
                            user: s.clone(),
                            ts: v,
                            body: s,
                            n: v / 2,
                        };
                        (
                            t.encode_value(&r),
                            to_item_bytes(&r).unwrap(),
                            batch.put_as(t, &r).map(|_| ()),
                        )
                    }
                    1 => {
                        let r = B {
                            n: v,
                            user: s.clone(),
                            body: s,
                            ts: v / 3,
                        };
                        (
                            t.encode_value(&r),
                            to_item_bytes(&r).unwrap(),
                            batch.put_as(t, &r).map(|_| ()),
                        )
                    }
                    2 => {
                        let r = C { ts: v, body: s };
                        (
                            t.encode_value(&r),
                            to_item_bytes(&r).unwrap(),
                            batch.put_as(t, &r).map(|_| ()),
                        )
                    }
                    _ => {
                        let r = D {
                            x: v,
                            n: -v / 5,
                            body: s.clone(),
                            ts: v,
                            user: s,
                        };
                        (
                            t.encode_value(&r),
                            to_item_bytes(&r).unwrap(),
                            batch.put_as(t, &r).map(|_| ()),
                        )
                    }
                };
                let want = reference_key(t, &decode_item(&bytes).unwrap());
                match (&put, &want) {
                    (Ok(()), Ok(k)) => want_ops.push((k.clone(), bytes.clone())),
                    (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => prop_assert!(false, "put_as {:?}, reference {:?}", a, b),
                }
                same(
                    typed.map(|(k, v)| {
                        assert_eq!(v, bytes);
                        k
                    }),
                    &want,
                )?;
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> = batch
                .inner
                .iter()
                .map(|(k, v)| (k.to_vec(), v.unwrap_or_default().to_vec()))
                .collect();
            prop_assert_eq!(got, want_ops);
            Ok(())
        })
        .unwrap();
}
