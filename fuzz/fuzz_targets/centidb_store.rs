//! A store whose engine holds arbitrary pairs (metadata, records, batches, index entries):
//! every read, and a put and a delete on top, return results or errors, never panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_centidb::{BatchOptions, CollectionOptions, Doc, FnSpec, IndexQuery, Query, Store};
use strata_key::tuple;
use strata_lsm::{Engine, MemEngine, WriteBatch};

fuzz_target!(|data: &[u8]| {
    let engine: Arc<dyn Engine> = Arc::new(MemEngine::new());
    let store = Store::open(Arc::clone(&engine), b"").unwrap();
    let Ok(c) = store.add_collection(
        "c",
        CollectionOptions::new().key_fn(FnSpec::Item { index: 0 }.to_fn()),
    ) else {
        return;
    };
    let Ok(ix) = c.add_index("i", FnSpec::Item { index: 1 }.to_fn()) else { return };
    // Pairs: [klen, vlen, key…, value…]…, keys placed under the collection (0a), the
    // index (0b) or the metadata (09) by their first byte.
    let mut b = WriteBatch::new();
    let mut rest = data;
    while rest.len() >= 2 {
        let (kl, vl) = (rest[0] as usize % 24, rest[1] as usize % 64);
        rest = &rest[2..];
        if rest.len() < kl + vl || kl == 0 {
            break;
        }
        let mut k = vec![[0x0a, 0x0b, 0x09][rest[0] as usize % 3]];
        k.extend_from_slice(&rest[1..kl]);
        b.put(k, rest[kl..kl + vl].to_vec());
        rest = &rest[kl + vl..];
    }
    engine.write(b).unwrap();
    for reverse in [false, true] {
        let q = Query { reverse, ..Query::default() };
        if let Ok(it) = c.items(&q) {
            for r in it.take(64) {
                let _ = r;
            }
        }
        let q = Query { reverse, lo: Some(tuple!(1)), hi: Some(tuple!(100)), ..Query::default() };
        if let Ok(it) = c.keys(&q) {
            for r in it.take(64) {
                let _ = r;
            }
        }
        let iq = IndexQuery { reverse, ..IndexQuery::default() };
        if let Ok(it) = ix.items(&iq) {
            for r in it.take(64) {
                let _ = r;
            }
        }
    }
    let _ = c.get(&tuple!(5));
    let _ = c.put(&Doc::Tuple(vec![Doc::Int(5), Doc::Int(1)]));
    let _ = c.delete(&tuple!(3));
    let _ = c.batch(&BatchOptions { max_recs: Some(3), ..Default::default() });
    let _ = store.collections();
    let _ = store.count(&strata_key::Value::Bytes(b"n".to_vec()), 1, 1);
});
