//! Options of [`crate::LsmEngine`].

use std::sync::Arc;

use crate::fs::Fs;
use crate::partition::Partitioner;

/// When a write is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Acknowledged = on disk: the WAL is fsynced (one fsync shared by concurrent writers).
    #[default]
    Always,
    /// Acknowledged = in the OS page cache: survives a process crash, and an OS crash recovers
    /// a consistent prefix of the acknowledged writes (every write made durable before it —
    /// by a `SyncMode::Always` write, [`crate::LsmEngine::sync_wal`] or a flush — included).
    /// The OS may have written back a later page of the WAL's unsynced tail and not an earlier
    /// one: each WAL record (v3, v4) carries the offset through which the WAL was synced, so
    /// the open tells such an unsynced hole (the end of the prefix) from damage to synced bytes
    /// (refused). A batch bigger than a page is written (v4) as fragments that never cross a
    /// 4 KiB page, each with its own checksum, so a lost middle page of it is a lost fragment:
    /// an unsynced hole too. One case still refuses the open: a page write torn inside one
    /// fragment (a middle 512-byte sector lost, the sectors around it written; `strata kv
    /// repair` keeps the writes before it). See `docs/format/lsm.md`, "WAL v4".
    None,
}

/// Options of [`crate::LsmEngine::open`].
#[derive(Clone)]
pub struct LsmOptions {
    /// Number of stripes (independent LSM trees). Used only when creating a database; an
    /// existing database keeps the count recorded in its manifest.
    ///
    /// Default 1: an ordered key-value store wants neighbouring keys together. Stripes spread
    /// keys by a hash of their partition, so a range that is not inside one partition must
    /// merge every stripe (a seek positions one tree per stripe). Striping pays where reads
    /// stay inside partitions or where keys carry their stripe in key order — Strata's tables
    /// create their databases with 256 stripes.
    pub stripes: u32,
    /// Durability of acknowledged writes.
    pub sync: SyncMode,
    /// The partitioner the caller requires. `None`: whatever the database records (a new
    /// database gets [`Partitioner::WholeKey`]). `Some(p)`: a new database records `p`; an
    /// existing one must record `p`, or the open fails with
    /// [`crate::Error::PartitionerMismatch`]. (Databases written before partitioners were
    /// recorded: see `docs/format/lsm.md`.)
    pub partitioner: Option<Partitioner>,
    /// Capacity of the shared block cache, in bytes.
    pub block_cache_bytes: usize,
    /// Global budget for all memtables (active and being flushed), in bytes. Writes stall when
    /// it is used up and the flush has not caught up.
    pub memtable_budget_bytes: usize,
    /// Target size of an SST data block, in bytes.
    pub block_bytes: usize,
    /// Target size of one SST file produced by compaction, in bytes.
    pub sst_target_bytes: u64,
    /// Number of L0 files of a stripe that triggers its compaction.
    pub l0_compaction_trigger: usize,
    /// Number of L0 files of a stripe at which writes stall until compaction catches up.
    pub l0_stop_trigger: usize,
    /// Target size of level 1 of one stripe; each deeper level is 10 times larger.
    pub level1_bytes: u64,
    /// Run flush and compaction on background threads (false: only when asked, for tests).
    pub background: bool,
    /// Read SST blocks (point reads, seeks, Queries and scans) through a read-only memory map
    /// of each SST instead of a `pread` system call per block (or per run of a few blocks).
    /// Compaction inputs (read ahead in runs of up to 256 KiB), whole-file checks and opening
    /// an SST still use `pread`. Every block's checksum is checked either way.
    ///
    /// Default `true` (as LevelDB does on 64-bit systems): a cold point read costs about a
    /// quarter less CPU (`docs/bench/lsm-cold3.md`). The price, as for every mapped-file
    /// database (LMDB; RocksDB with `allow_mmap_reads`): if another program truncates a live
    /// SST, or the device fails while the kernel reads a mapped page in, the process is killed
    /// by `SIGBUS` instead of the read returning an I/O error. No acknowledged write is lost
    /// either way (the WAL and the SSTs are unchanged), but a server that must survive a failing
    /// disk with an error per request should set `false`. Mapped pages are the OS page cache:
    /// they count in the process's RSS, and the kernel reclaims them under memory pressure.
    /// A mapped block's checksum is checked on its first read since the open (as a block
    /// entering the block cache is), not on every later copy out of the map: bytes that change
    /// under a live database (another program writing the SST, a medium returning other bytes
    /// when an evicted page is read in again) are caught at the next open or `check`. With
    /// `false`, every read from the file checks its block. Reads of a mapped SST (point reads
    /// and iterators) use its blocks where they lie and neither ask nor fill the block cache;
    /// the cache serves unmapped files.
    pub mmap_reads: bool,
    /// Size at which the manifest (the log of flushes and compactions) is rolled over: a new
    /// manifest holding a snapshot of the state is written and synced, `CURRENT` is switched
    /// to it, and the old one is deleted. Default 4 MiB (RocksDB's `max_manifest_file_size`
    /// plays the same part). A smaller value rolls more often; reopening reads at most about
    /// this many bytes of manifest plus one snapshot.
    pub manifest_roll_bytes: u64,
    /// The file system layer (tests inject faults here); `None`: the real file system.
    pub fs: Option<Arc<dyn Fs>>,
}

impl Default for LsmOptions {
    fn default() -> LsmOptions {
        LsmOptions {
            stripes: 1,
            sync: SyncMode::Always,
            partitioner: None,
            block_cache_bytes: 64 << 20,
            memtable_budget_bytes: 64 << 20,
            block_bytes: 4096,
            sst_target_bytes: 4 << 20,
            l0_compaction_trigger: 4,
            l0_stop_trigger: 16,
            level1_bytes: 8 << 20,
            background: true,
            mmap_reads: true,
            manifest_roll_bytes: 4 << 20,
            fs: None,
        }
    }
}

impl std::fmt::Debug for LsmOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LsmOptions")
            .field("stripes", &self.stripes)
            .field("sync", &self.sync)
            .field("partitioner", &self.partitioner)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("memtable_budget_bytes", &self.memtable_budget_bytes)
            .field("block_bytes", &self.block_bytes)
            .field("sst_target_bytes", &self.sst_target_bytes)
            .field("background", &self.background)
            .field("mmap_reads", &self.mmap_reads)
            .field("manifest_roll_bytes", &self.manifest_roll_bytes)
            .finish()
    }
}
