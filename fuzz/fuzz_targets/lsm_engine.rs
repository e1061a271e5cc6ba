//! The whole engine against a `BTreeMap`, in the manner of redb's `fuzz_redb.rs`: random puts,
//! deletes, conditional batches, flushes, compactions, reopens (read-write and read-only),
//! point reads and range scans, with the fault-injecting file system failing every change
//! after a countdown. After a failure the engine is killed, the unsynced bytes are dropped (a
//! power loss), and the database reopened: every acknowledged write must be there, and the
//! failed batch must be either wholly there or wholly absent.
#![no_main]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_lsm::{
    Condition, Direction, Engine, Error, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions,
    Partitioner, SyncMode, WriteBatch,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Reads the fuzzer's bytes as small numbers.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn key(&mut self) -> Option<Vec<u8>> {
        // Few distinct keys, so that operations meet: 1–2 bytes from a small alphabet.
        let a = self.byte()?;
        let mut k = vec![b'a' + a % 12];
        if a & 0x80 != 0 {
            k.push(b'0' + self.byte()? % 10);
        }
        Some(k)
    }
    fn value(&mut self) -> Option<Vec<u8>> {
        let n = self.byte()? % 48;
        let fill = self.byte()?;
        Some((0..n).map(|i| fill.wrapping_add(i)).collect())
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        // A RAM file system when there is one: fsyncs cost nothing there.
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let p = base.join(format!(
            "strata-fuzz-engine-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn options(fs: &Arc<FaultFs>, stripes: u32, partitioned: bool) -> LsmOptions {
    LsmOptions {
        stripes,
        sync: SyncMode::Always,
        partitioner: partitioned.then_some(Partitioner::FixedPrefix(1)),
        block_cache_bytes: 4096,
        memtable_budget_bytes: 2048,
        block_bytes: 64,
        sst_target_bytes: 512,
        l0_compaction_trigger: 2,
        l0_stop_trigger: 6,
        level1_bytes: 1024,
        background: false,
        // FaultFs never maps its files; the option only has to be set.
        mmap_reads: true,
        // Roll the manifest over every few edits: I/O faults land inside roll-overs too.
        manifest_roll_bytes: 2 << 10,
        fs: Some(Arc::clone(fs) as Arc<dyn Fs>),
    }
}

fn contents(e: &LsmEngine) -> Model {
    e.range(KeyRange::all(), Direction::Forward)
        .expect("range")
        .map(|r| r.expect("scan"))
        .collect()
}

fn apply(m: &mut Model, b: &WriteBatch) {
    for (k, v) in b.iter() {
        match v {
            Some(v) => {
                m.insert(k.to_vec(), v.to_vec());
            }
            None => {
                m.remove(k);
            }
        }
    }
}

fn is_injected(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => source.to_string().contains("injected fault"),
        Error::Poisoned(_) => true,
        _ => false,
    }
}

/// After a failure: kill, lose what was not synced, reopen without faults, and compare with
/// the model (and the model with the failed batch applied).
fn recover(
    dir: &Path,
    fs: &Arc<FaultFs>,
    o: &LsmOptions,
    e: Option<LsmEngine>,
    m: &mut Model,
    pending: Option<&WriteBatch>,
) -> LsmEngine {
    if let Some(e) = e {
        e.kill();
    }
    fs.crash().expect("crash");
    let ro = LsmEngine::open_read_only(dir, o.clone()).expect("read-only open after a crash");
    let got = contents(&ro);
    drop(ro);
    if got != *m {
        let mut with = m.clone();
        match pending {
            Some(b) if {
                apply(&mut with, b);
                got == with
            } =>
            {
                *m = with
            }
            _ => panic!("after a crash: {got:?}\nexpected {m:?}\nor with {pending:?}"),
        }
    }
    let e = LsmEngine::open(dir, o.clone()).expect("reopen after a crash");
    assert_eq!(contents(&e), *m, "read-write open differs from read-only open");
    e
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let Some(setup) = input.byte() else { return };
    let tmp = TempDir::new();
    let dir = tmp.0.as_path();
    let fs = Arc::new(FaultFs::new());
    let o = options(&fs, 1 + u32::from(setup % 4), setup & 0x10 != 0);
    let mut e = LsmEngine::open(dir, o.clone()).expect("open");
    let mut m = Model::new();
    let mut steps = 0;
    while let Some(op) = input.byte() {
        steps += 1;
        if steps > 400 {
            break;
        }
        // Every step returns either an engine result to judge, or nothing.
        let (r, pending): (Option<Result<(), Error>>, Option<WriteBatch>) = match op % 16 {
            0..=3 => {
                let (Some(k), Some(v)) = (input.key(), input.value()) else { break };
                let mut b = WriteBatch::new();
                b.put(k, v);
                (Some(e.write(b.clone())), Some(b))
            }
            4 | 5 => {
                let Some(k) = input.key() else { break };
                let mut b = WriteBatch::new();
                b.delete(k);
                (Some(e.write(b.clone())), Some(b))
            }
            6 | 7 => {
                let Some(n) = input.byte() else { break };
                let mut b = WriteBatch::new();
                for _ in 0..n % 6 {
                    let (Some(k), Some(v), Some(d)) = (input.key(), input.value(), input.byte())
                    else {
                        break;
                    };
                    if d % 4 == 0 {
                        b.delete(k);
                    } else {
                        b.put(k, v);
                    }
                }
                let (Some(c), Some(k)) = (input.byte(), input.key()) else { break };
                let cond = match c % 4 {
                    0 => None,
                    1 => Some(Condition::Absent(k)),
                    2 => Some(Condition::Present(k)),
                    _ => {
                        let want = m.get(&k).cloned().filter(|_| c & 0x10 != 0);
                        Some(Condition::Equals(k, want))
                    }
                };
                let holds = cond
                    .as_ref()
                    .is_none_or(|c| c.holds(m.get(c.key()).map(Vec::as_slice)));
                if let Some(c) = cond {
                    b.require(c);
                }
                match e.write(b.clone()) {
                    Err(Error::ConditionFailed { .. }) => {
                        assert!(!holds, "a condition that holds failed");
                        (None, None)
                    }
                    r => {
                        if r.is_ok() {
                            assert!(holds, "a batch was applied although its condition failed");
                        }
                        (Some(r), Some(b))
                    }
                }
            }
            8 => (Some(e.flush()), None),
            9 => (Some(e.compact()), None),
            10 => {
                let r = e.close();
                drop(e);
                match r.and_then(|()| LsmEngine::open(dir, o.clone())) {
                    Ok(n) => {
                        e = n;
                        (None, None)
                    }
                    Err(err) => {
                        assert!(is_injected(&err), "reopen: {err}");
                        e = recover(dir, &fs, &o, None, &mut m, None);
                        continue;
                    }
                }
            }
            11 => {
                // Read-only reopen: it must see everything and change nothing.
                let r = e.close();
                drop(e);
                if let Err(err) = r {
                    assert!(is_injected(&err), "close: {err}");
                    e = recover(dir, &fs, &o, None, &mut m, None);
                    continue;
                }
                let before = fs.mutations();
                let ro = LsmEngine::open_read_only(dir, o.clone()).expect("read-only open");
                assert_eq!(contents(&ro), m, "read-only open");
                assert!(matches!(ro.flush(), Err(Error::ReadOnly)));
                drop(ro);
                assert_eq!(fs.mutations(), before, "a read-only open changed files");
                match LsmEngine::open(dir, o.clone()) {
                    Ok(n) => e = n,
                    Err(err) => {
                        assert!(is_injected(&err), "reopen: {err}");
                        e = recover(dir, &fs, &o, None, &mut m, None);
                    }
                }
                (None, None)
            }
            12 => {
                let Some(n) = input.byte() else { break };
                fs.fail_after_ops(Some(u64::from(n % 40)));
                (None, None)
            }
            13 => {
                let Some(k) = input.key() else { break };
                match e.get(&k) {
                    Ok(v) => assert_eq!(v.as_ref(), m.get(&k), "get {k:?}"),
                    Err(err) => assert!(is_injected(&err), "get: {err}"),
                }
                (None, None)
            }
            _ => {
                let (Some(a), Some(b), Some(rev)) = (input.key(), input.key(), input.byte())
                else {
                    break;
                };
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let range = KeyRange {
                    start: Bound::Included(lo.clone()),
                    end: Bound::Excluded(hi.clone()),
                };
                let dirn = if rev & 1 == 1 {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                let got: Vec<_> = e
                    .range(range, dirn)
                    .expect("range")
                    .map(|r| r.expect("scan"))
                    .collect();
                let mut want: Vec<_> = m
                    .range(lo..hi)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if dirn == Direction::Reverse {
                    want.reverse();
                }
                assert_eq!(got, want);
                (None, None)
            }
        };
        match r {
            None => {}
            Some(Ok(())) => {
                if let Some(b) = &pending {
                    apply(&mut m, b);
                }
            }
            Some(Err(err)) => {
                assert!(is_injected(&err), "unexpected error: {err}");
                e = recover(dir, &fs, &o, Some(e), &mut m, pending.as_ref());
            }
        }
    }
    fs.disarm();
    assert_eq!(contents(&e), m, "at the end");
    let _ = e.close();
});
