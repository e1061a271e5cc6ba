//! The model-based test harness shared by the in-memory and on-disk model tests: random
//! schemas, items, writes, and queries with every operator, direction, limit and pagination,
//! checked against a straightforward in-memory model.
#![allow(dead_code)]

pub mod dyn_attr;

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use strata::{
    Db, Direction, Item, Key, KeyField, Nulls, Page, Query, Scan, SortCondition, Table, TableSchema,
};
use strata_key::{Kind, Value};

use dyn_attr::Dyn;

/// splitmix64: a tiny deterministic generator driven by a proptest seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const KINDS: &[Kind] = &[
    Kind::Int,
    Kind::Text,
    Kind::Bytes,
    Kind::Bool,
    Kind::Float,
    Kind::Tuple,
];

pub fn random_schema(rng: &mut Rng, name: &str) -> TableSchema {
    let field = |rng: &mut Rng, name: String| {
        let mut f = KeyField::new(name, *rng.pick(KINDS));
        if rng.chance(50) {
            f = f.desc();
        }
        if rng.chance(50) {
            f = f.nulls_last();
        }
        f
    };
    let np = 1 + rng.below(2);
    let ns = 1 + rng.below(3);
    let partition = (0..np).map(|i| field(rng, format!("p{i}"))).collect();
    let sort = (0..ns).map(|i| field(rng, format!("s{i}"))).collect();
    TableSchema::new(name, partition).with_sort(sort)
}

/// A small domain per kind, so that keys collide and ranges are interesting.
pub fn random_value(rng: &mut Rng, kind: Kind, null_percent: u64) -> Value {
    if rng.chance(null_percent) {
        return Value::Null;
    }
    match kind {
        Kind::Int => Value::Int(*rng.pick(&[-(1i128 << 70), -2, -1, 0, 1, 2, 3, 1 << 64])),
        Kind::Text => {
            Value::from(*rng.pick(&["", "a", "a\0", "ab", "abc", "b", "é", "\u{10FFFF}"]))
        }
        Kind::Bytes => Value::Bytes(
            rng.pick(&[
                &[][..],
                &[0],
                &[0, 0],
                &[1],
                &[1, 2],
                &[0xff],
                &[0xff, 0xff],
            ])
            .to_vec(),
        ),
        Kind::Bool => Value::Bool(rng.chance(50)),
        Kind::Float => {
            Value::Float(*rng.pick(&[f64::NEG_INFINITY, -1.5, -0.0, 0.0, 2.5, f64::NAN]))
        }
        Kind::Tuple => {
            let n = rng.below(3);
            Value::Tuple((0..n).map(|_| Value::Int(rng.below(3) as i128)).collect())
        }
        _ => Value::Null,
    }
}

fn random_prefix(rng: &mut Rng, kind: Kind) -> Value {
    match kind {
        Kind::Text => Value::from(*rng.pick(&["", "a", "ab", "b", "\u{10FFFF}", "é"])),
        _ => Value::Bytes(
            rng.pick(&[&[][..], &[0], &[1], &[0xff], &[0xff, 0xff]])
                .to_vec(),
        ),
    }
}

/// The model: every live item by key.
#[derive(Default, Clone)]
pub struct Model {
    pub items: HashMap<(Vec<Value>, Vec<Value>), Item>,
}

pub fn field_cmp(f: &KeyField, a: &Value, b: &Value) -> Ordering {
    // Written independently of `KeyField::cmp`: NULL placement first, then the direction.
    let nulls_first = f.nulls == Nulls::First;
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (_, Value::Null) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        _ if f.order == Direction::Desc => b.cmp(a),
        _ => a.cmp(b),
    }
}

pub fn prefix_cmp(fields: &[KeyField], a: &[Value], v: &[Value]) -> Ordering {
    fields
        .iter()
        .zip(a.iter().zip(v))
        .map(|(f, (x, y))| field_cmp(f, x, y))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
}

/// Whether a condition compares values (the fields it names are all ascending or all
/// descending) rather than positions in the table's order (mixed directions).
fn value_semantics(schema: &TableSchema, c: &SortCondition) -> bool {
    let len = match c {
        SortCondition::Between(lo, hi) => lo.len().max(hi.len()),
        SortCondition::Eq(v)
        | SortCondition::Lt(v)
        | SortCondition::Le(v)
        | SortCondition::Gt(v)
        | SortCondition::Ge(v)
        | SortCondition::BeginsWith(v) => v.len(),
    };
    let named = &schema.sort[..len.min(schema.sort.len())];
    named.iter().all(|f| f.order == Direction::Asc)
        || named.iter().all(|f| f.order == Direction::Desc)
}

/// SQL's row comparison: the first field that differs decides; a NULL met before that (in the
/// item or in the condition) makes the comparison unknown (`None`), which never matches.
/// Fields compare by value, or in the table's order when `by_value` is false.
fn sql_cmp(fields: &[KeyField], a: &[Value], v: &[Value], by_value: bool) -> Option<Ordering> {
    for (f, (x, y)) in fields.iter().zip(a.iter().zip(v)) {
        if x.is_null() || y.is_null() {
            return None;
        }
        let o = if by_value {
            x.cmp(y)
        } else {
            field_cmp(f, x, y)
        };
        if o != Ordering::Equal {
            return Some(o);
        }
    }
    Some(Ordering::Equal)
}

/// `eq` is key identity (`IS NOT DISTINCT FROM`): a NULL value matches a NULL.
fn same_values(a: &[Value], v: &[Value]) -> bool {
    a.iter().zip(v).all(|(x, y)| x == y)
}

pub fn model_matches(schema: &TableSchema, sort: &[Value], c: &SortCondition) -> bool {
    let f = &schema.sort;
    let by_value = value_semantics(schema, c);
    let cmp = |v: &[Value]| sql_cmp(f, sort, v, by_value);
    match c {
        SortCondition::Eq(v) => same_values(sort, v),
        SortCondition::Lt(v) => cmp(v).is_some_and(Ordering::is_lt),
        SortCondition::Le(v) => cmp(v).is_some_and(Ordering::is_le),
        SortCondition::Gt(v) => cmp(v).is_some_and(Ordering::is_gt),
        SortCondition::Ge(v) => cmp(v).is_some_and(Ordering::is_ge),
        SortCondition::Between(lo, hi) => {
            cmp(lo).is_some_and(Ordering::is_ge) && cmp(hi).is_some_and(Ordering::is_le)
        }
        SortCondition::BeginsWith(v) => {
            let k = v.len() - 1;
            same_values(sort, &v[..k])
                && match (&sort[k], &v[k]) {
                    (Value::Text(a), Value::Text(p)) => a.starts_with(p.as_str()),
                    (Value::Bytes(a), Value::Bytes(p)) => a.starts_with(p),
                    _ => false,
                }
        }
    }
}

impl Model {
    pub fn query(&self, schema: &TableSchema, q: &Query) -> Vec<Item> {
        let mut hits: Vec<(&Vec<Value>, &Item)> = self
            .items
            .iter()
            .filter(|((p, s), _)| {
                p == &q.partition && q.sort.as_ref().is_none_or(|c| model_matches(schema, s, c))
            })
            .map(|((_, s), it)| (s, it))
            .collect();
        hits.sort_by(|a, b| prefix_cmp(&schema.sort, a.0, b.0));
        if q.reverse {
            hits.reverse();
        }
        hits.into_iter().map(|(_, it)| it.clone()).collect()
    }
}

pub fn random_item(rng: &mut Rng, schema: &TableSchema, stamp: u64) -> Item {
    let mut item = Item::new().with("v", stamp as i64);
    for f in schema.key_fields() {
        item.insert(f.name.clone(), random_value(rng, f.kind, 12).into());
    }
    if rng.chance(30) {
        item.insert(
            "doc".into(),
            strata::Attr::List(vec![
                strata::Attr::from("x"),
                strata::Attr::Map(Item::new().with("n", 1)),
            ]),
        );
    }
    item
}

pub fn random_condition(rng: &mut Rng, schema: &TableSchema) -> Option<SortCondition> {
    if rng.chance(15) {
        return None;
    }
    let m = schema.sort.len();
    let vals = |rng: &mut Rng, k: usize| -> Vec<Value> {
        schema.sort[..k]
            .iter()
            .map(|f| random_value(rng, f.kind, 10))
            .collect()
    };
    let k = 1 + rng.below(m);
    Some(match rng.below(7) {
        0 => SortCondition::Eq(vals(rng, k)),
        1 => SortCondition::Lt(vals(rng, k)),
        2 => SortCondition::Le(vals(rng, k)),
        3 => SortCondition::Gt(vals(rng, k)),
        4 => SortCondition::Ge(vals(rng, k)),
        5 => {
            let k2 = 1 + rng.below(m);
            SortCondition::Between(vals(rng, k), vals(rng, k2))
        }
        _ => {
            let kind = schema.sort[k - 1].kind;
            if !matches!(kind, Kind::Text | Kind::Bytes) {
                return Some(SortCondition::Ge(vals(rng, k)));
            }
            let mut v = vals(rng, k - 1);
            v.push(random_prefix(rng, kind));
            SortCondition::BeginsWith(v)
        }
    })
}

/// Runs a query to the end, page by page; panics on a repeated key.
pub fn query_all(t: &Table, q: &Query) -> Vec<Item> {
    let mut out = Vec::new();
    let mut q = q.clone();
    let mut pages = 0;
    loop {
        let Page { items, last_key } = t.query(&q).unwrap();
        // The streaming form returns the same items and last key.
        let mut rows = t.query_rows(&q).unwrap();
        let streamed: Vec<Item> = rows.by_ref().map(Result::unwrap).collect();
        assert_eq!(streamed, items);
        assert_eq!(rows.last_key(), last_key.as_ref());
        // Typed pages and typed rows: the same items, decoded straight into `Dyn`.
        let typed = t.query_as::<Dyn>(&q).unwrap();
        let want: Vec<Dyn> = items.iter().map(Dyn::of_item).collect();
        assert_eq!(typed.items, want);
        assert_eq!(typed.last_key, last_key);
        let mut rows = t.query_rows_as::<Dyn>(&q).unwrap();
        let streamed: Vec<Dyn> = rows.by_ref().map(Result::unwrap).collect();
        assert_eq!(streamed, want);
        assert_eq!(rows.last_key(), last_key.as_ref());
        if let Some(l) = q.limit {
            assert!(items.len() <= l);
        }
        if last_key.is_some() {
            assert_eq!(Some(items.len()), q.limit, "a page with a last key is full");
            assert_eq!(
                last_key.as_ref(),
                Some(&t.key_of(items.last().unwrap()).unwrap())
            );
        }
        out.extend(items);
        pages += 1;
        assert!(pages < 10_000);
        match last_key {
            Some(k) => q.after = Some(k),
            None => return out,
        }
    }
}

/// Scans every segment of `n`, page by page; returns the items of each segment.
pub fn scan_segments(t: &Table, n: u32, limit: Option<usize>) -> Vec<Vec<Item>> {
    (0..n)
        .map(|seg| {
            let mut s = Scan::segment(seg, n);
            s.limit = limit;
            let mut out = Vec::new();
            loop {
                let Page { items, last_key } = t.scan(&s).unwrap();
                // Typed pages and rows of the same scan: the same items and last key.
                let typed = t.scan_as::<Dyn>(&s).unwrap();
                let want: Vec<Dyn> = items.iter().map(Dyn::of_item).collect();
                assert_eq!(typed.items, want);
                assert_eq!(typed.last_key, last_key);
                let mut rows = t.scan_rows_as::<Dyn>(&s).unwrap();
                let streamed: Vec<Dyn> = rows.by_ref().map(Result::unwrap).collect();
                assert_eq!(streamed, want);
                assert_eq!(rows.last_key(), last_key.as_ref());
                for it in &items {
                    let k = t.key_of(it).unwrap();
                    assert_eq!(t.segment_of(&k.partition, n).unwrap(), seg);
                }
                out.extend(items);
                match last_key {
                    Some(k) => s.after = Some(k),
                    None => break,
                }
            }
            out
        })
        .collect()
}

pub fn key_set(t: &Table, items: &[Item]) -> BTreeSet<String> {
    items
        .iter()
        .map(|it| format!("{:?}", t.key_of(it).unwrap()))
        .collect()
}

/// What the model test does between writes.
pub enum Hook<'a> {
    /// Nothing (in-memory).
    None,
    /// Flush, compact and reopen the database at random (on disk).
    Lsm(&'a dyn Fn(&mut Rng, Db) -> Db),
}

/// One model-based case: random schema, writes, queries and scans, checked against the model.
pub fn run_case(seed: u64, mut db: Db, ops: usize, hook: Hook<'_>) {
    let mut rng = Rng(seed);
    let schema = random_schema(&mut rng, "t");
    db.create_table(schema.clone()).unwrap();
    let mut model = Model::default();
    // Partitions drawn from a few candidates so that partitions hold several items.
    let partitions: Vec<Vec<Value>> = (0..3)
        .map(|_| {
            schema
                .partition
                .iter()
                .map(|f| random_value(&mut rng, f.kind, 10))
                .collect()
        })
        .collect();
    for step in 0..ops {
        let t = db.table("t").unwrap();
        let mut item = random_item(&mut rng, &schema, step as u64);
        for (f, v) in schema.partition.iter().zip(rng.pick(&partitions).clone()) {
            item.insert(f.name.clone(), v.into());
        }
        let key = t.key_of(&item).unwrap();
        let mk = (key.partition.clone(), key.sort.clone());
        match rng.below(10) {
            0 => {
                t.delete(&key).unwrap();
                model.items.remove(&mk);
            }
            1 => {
                let r = t.put_if_not_exists(&item);
                match model.items.entry(mk) {
                    std::collections::hash_map::Entry::Occupied(_) => assert!(
                        matches!(r, Err(strata::Error::ConditionFailed { .. })),
                        "{r:?}"
                    ),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        r.unwrap();
                        v.insert(item);
                    }
                }
            }
            2 | 3 if Dyn::expressible(&item) => {
                // The typed write of the same item: the same key and bytes.
                t.put_as(&Dyn::of_item(&item)).unwrap();
                model.items.insert(mk, item);
            }
            _ => {
                t.put(&item).unwrap();
                model.items.insert(mk, item);
            }
        }
        if let Hook::Lsm(f) = &hook {
            if rng.chance(4) {
                db = f(&mut rng, db);
            }
        }
        if step % 8 == 7 {
            check_queries(&db, &schema, &model, &partitions, &mut rng);
        }
    }
    check_queries(&db, &schema, &model, &partitions, &mut rng);
    check_scans(&db, &model, &mut rng);
    // Point reads agree with the model.
    let t = db.table("t").unwrap();
    for ((p, s), it) in &model.items {
        let k = Key::new(p.clone(), s.clone());
        assert_eq!(t.get(&k).unwrap().as_ref(), Some(it));
        assert_eq!(t.get_as::<Dyn>(&k).unwrap(), Some(Dyn::of_item(it)));
    }
}

fn check_queries(
    db: &Db,
    schema: &TableSchema,
    model: &Model,
    partitions: &[Vec<Value>],
    rng: &mut Rng,
) {
    let t = db.table("t").unwrap();
    for _ in 0..6 {
        let mut q = Query::new(rng.pick(partitions).clone());
        q.sort = random_condition(rng, schema);
        q.reverse = rng.chance(50);
        q.limit = if rng.chance(25) {
            None
        } else {
            Some(1 + rng.below(4))
        };
        let got = query_all(&t, &q);
        let want = model.query(schema, &q);
        assert_eq!(got, want, "query {q:?} on schema {}", schema.to_json());
    }
}

fn check_scans(db: &Db, model: &Model, rng: &mut Rng) {
    let t = db.table("t").unwrap();
    let want: BTreeSet<String> = model
        .items
        .keys()
        .map(|(p, s)| format!("{:?}", Key::new(p.clone(), s.clone())))
        .collect();
    let whole = scan_segments(&t, 1, None).remove(0);
    assert_eq!(key_set(&t, &whole), want);
    assert_eq!(whole.len(), want.len());
    // Full scan order: partition hash, then partition in schema order, then sort order.
    let schema = t.schema().clone();
    let rank = |it: &Item| {
        let k = t.key_of(it).unwrap();
        (t.partition_hash(&k.partition).unwrap(), k)
    };
    for w in whole.windows(2) {
        let (ha, ka) = rank(&w[0]);
        let (hb, kb) = rank(&w[1]);
        let o = ha
            .cmp(&hb)
            .then_with(|| prefix_cmp(&schema.partition, &ka.partition, &kb.partition))
            .then_with(|| prefix_cmp(&schema.sort, &ka.sort, &kb.sort));
        assert_eq!(o, Ordering::Less, "scan order");
    }
    for n in [2u32, 3, 1 + rng.below(9) as u32, 1024] {
        let limit = if rng.chance(30) {
            None
        } else {
            Some(1 + rng.below(3))
        };
        let segs = scan_segments(&t, n, limit);
        let total: usize = segs.iter().map(Vec::len).sum();
        assert_eq!(total, want.len(), "segments of {n} repeat or miss items");
        let all: Vec<Item> = segs.concat();
        assert_eq!(key_set(&t, &all), want, "segments of {n} are not complete");
        // Segments are contiguous hash ranges: in segment order they are the full scan.
        assert_eq!(all, whole);
    }
}
