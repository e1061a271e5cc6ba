//! A hypercore@6 feed over the six SLEEP files: append (signed), read, open, verify.

use super::batch_tree::BatchTree;
use super::bitfield::Bitfield;
use super::crypto::{self, KeyPair, TreeNode};
use super::flat;
use super::store::FeedFiles;
use crate::error::{Error, Result};

/// Default bitfield page size of hypercore 6.26 (DEP-0009 says 3328; hypercore writes 3584).
pub const BITFIELD_PAGE_SIZE: usize = 3584;
/// Bytes per tree slot: hash ‖ u64be size.
const TREE_SLOT: u64 = 40;
/// Bytes per signature slot.
const SIG_SLOT: u64 = 64;
/// The 32-byte header of every SLEEP file but data/key/secret_key.
const HEADER: u64 = 32;

/// The DEP-0009 header: magic, type, version 0, u16be entry size, algorithm name.
pub fn sleep_header(kind: u8, entry_size: u16, name: &str) -> [u8; 32] {
    let mut h = [0u8; 32];
    h[..3].copy_from_slice(&[5, 2, 87]);
    h[3] = kind;
    h[5..7].copy_from_slice(&entry_size.to_be_bytes());
    h[7] = name.len() as u8;
    h[8..8 + name.len()].copy_from_slice(name.as_bytes());
    h
}

/// Checks the magic number, type and version (the first 5 header bytes) of a SLEEP file that
/// has a header.
fn check_magic(files: &FeedFiles, name: &str, kind: u8) -> Result<()> {
    let Some(file) = files.by_name(name) else {
        return Ok(());
    };
    if file.len().map_err(io_err(name))? < HEADER {
        return Ok(());
    }
    let mut head = [0u8; 5];
    file.read_at(0, &mut head).map_err(io_err(name))?;
    if head != [5, 2, 87, kind, 0] {
        return Err(storage_err(name, "bad header magic"));
    }
    Ok(())
}

/// One append-only feed.
pub struct Feed {
    files: FeedFiles,
    public_key: [u8; 32],
    key_pair: Option<KeyPair>,
    length: u64,
    byte_length: u64,
    /// `offsets[i]` = start of block `i` in `data`; one extra entry = `byte_length`.
    offsets: Vec<u64>,
    roots: Vec<TreeNode>,
    bitfield: Bitfield,
    /// The hash inputs of the batch being appended (reused: no allocation per batch).
    scratch: Vec<u8>,
    /// The merkle nodes of the batch being appended (reused).
    tree: BatchTree,
}

fn io_err(file: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(file, e)
}

fn storage_err(file: &str, reason: impl Into<String>) -> Error {
    Error::Storage {
        file: file.to_string(),
        reason: reason.into(),
    }
}

impl Feed {
    /// Creates a new, empty feed in `files` (which must be empty), owned by `key_pair`.
    /// With `store_secret_key` false the `secret_key` file stays empty (as for content feeds).
    pub fn create(
        mut files: FeedFiles,
        key_pair: Option<KeyPair>,
        public_key: [u8; 32],
        store_secret_key: bool,
    ) -> Result<Feed> {
        files
            .bitfield
            .write_at(0, &sleep_header(0, BITFIELD_PAGE_SIZE as u16, ""))
            .map_err(io_err("bitfield"))?;
        files
            .signatures
            .write_at(0, &sleep_header(1, 64, "Ed25519"))
            .map_err(io_err("signatures"))?;
        files
            .tree
            .write_at(0, &sleep_header(2, 40, "BLAKE2b"))
            .map_err(io_err("tree"))?;
        files.key.write_at(0, &public_key).map_err(io_err("key"))?;
        if let (Some(kp), true) = (&key_pair, store_secret_key) {
            files
                .secret_key
                .write_at(0, &kp.secret_key())
                .map_err(io_err("secret_key"))?;
        }
        Ok(Feed {
            files,
            public_key,
            key_pair,
            length: 0,
            byte_length: 0,
            offsets: vec![0],
            roots: Vec::new(),
            bitfield: Bitfield::new(BITFIELD_PAGE_SIZE, Vec::new()),
            scratch: Vec::new(),
            tree: BatchTree::default(),
        })
    }

    /// Opens an existing feed. Uses the stored secret key when present and `writable`.
    /// Checks that sizes agree across files (not hashes or signatures: see [`Feed::verify`]).
    pub fn open(files: FeedFiles, writable: bool) -> Result<Feed> {
        let mut public_key = [0u8; 32];
        if files.key.len().map_err(io_err("key"))? < 32 {
            return Err(storage_err("key", "shorter than 32 bytes"));
        }
        files
            .key
            .read_at(0, &mut public_key)
            .map_err(io_err("key"))?;
        let mut key_pair = None;
        if writable && files.secret_key.len().map_err(io_err("secret_key"))? >= 64 {
            let mut sk = [0u8; 64];
            files
                .secret_key
                .read_at(0, &mut sk)
                .map_err(io_err("secret_key"))?;
            let kp = KeyPair::from_secret_key(&sk)
                .map_err(|e| storage_err("secret_key", e.to_string()))?;
            if kp.public_key() != public_key {
                return Err(storage_err(
                    "secret_key",
                    "does not belong to the public key in `key`",
                ));
            }
            key_pair = Some(kp);
        }

        let bitfield_bytes = files.bitfield.read_all().map_err(io_err("bitfield"))?;
        let page_size = if bitfield_bytes.len() >= HEADER as usize {
            if bitfield_bytes[..4] != [5, 2, 87, 0] {
                return Err(storage_err("bitfield", "bad header magic"));
            }
            usize::from(u16::from_be_bytes([bitfield_bytes[5], bitfield_bytes[6]]))
        } else {
            BITFIELD_PAGE_SIZE
        };
        if page_size <= 3072 || !(page_size - 3072).is_power_of_two() {
            return Err(storage_err(
                "bitfield",
                format!("the header gives an unsupported page size {page_size}"),
            ));
        }
        let body = bitfield_bytes.get(HEADER as usize..).unwrap_or(&[]);
        let pages: Vec<Vec<u8>> = body.chunks(page_size).map(<[u8]>::to_vec).collect();
        let bitfield = Bitfield::new(page_size, pages);
        let length = bitfield.contiguous_blocks();

        check_magic(&files, "signatures", 1)?;
        check_magic(&files, "tree", 2)?;
        let tree_len = files.tree.len().map_err(io_err("tree"))?;
        let need = if length == 0 {
            HEADER
        } else {
            HEADER + TREE_SLOT * (2 * length - 1)
        };
        if tree_len < need {
            return Err(storage_err(
                "tree",
                format!("{tree_len} bytes, {length} blocks need {need}"),
            ));
        }
        let mut tree = vec![0u8; (need - HEADER) as usize];
        files
            .tree
            .read_at(HEADER, &mut tree)
            .map_err(io_err("tree"))?;
        let slot = |i: u64| -> TreeNode {
            let s = &tree[(i * TREE_SLOT) as usize..((i + 1) * TREE_SLOT) as usize];
            let mut hash = [0u8; 32];
            hash.copy_from_slice(&s[..32]);
            let mut size = [0u8; 8];
            size.copy_from_slice(&s[32..]);
            TreeNode {
                index: i,
                hash,
                size: u64::from_be_bytes(size),
            }
        };
        let mut offsets = Vec::with_capacity(length as usize + 1);
        let mut off = 0u64;
        offsets.push(0);
        for i in 0..length {
            let leaf = slot(2 * i);
            off = off
                .checked_add(leaf.size)
                .ok_or_else(|| storage_err("tree", format!("leaf {i} size overflows")))?;
            offsets.push(off);
        }
        let roots: Vec<TreeNode> = flat::full_roots(2 * length).into_iter().map(slot).collect();
        let byte_length = roots.iter().try_fold(0u64, |a, r| a.checked_add(r.size));
        if byte_length != Some(off) {
            return Err(storage_err(
                "tree",
                "root sizes disagree with the leaf sizes",
            ));
        }
        let data_len = files.data.len().map_err(io_err("data"))?;
        if data_len < off {
            return Err(storage_err(
                "data",
                format!("{data_len} bytes, the tree says {off}"),
            ));
        }
        Ok(Feed {
            files,
            public_key,
            key_pair,
            length,
            byte_length: off,
            offsets,
            roots,
            bitfield,
            scratch: Vec::new(),
            tree: BatchTree::default(),
        })
    }

    /// Number of blocks.
    pub fn len(&self) -> u64 {
        self.length
    }

    /// True when there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Total bytes of all blocks.
    pub fn byte_len(&self) -> u64 {
        self.byte_length
    }

    /// The public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.public_key
    }

    /// The key pair, when the feed is writable.
    pub fn key_pair(&self) -> Option<&KeyPair> {
        self.key_pair.as_ref()
    }

    /// True when blocks can be appended.
    pub fn writable(&self) -> bool {
        self.key_pair.is_some()
    }

    /// Gives the files back (to reopen them, e.g. as a database).
    pub fn into_files(self) -> FeedFiles {
        self.files
    }

    /// The files.
    pub fn files(&self) -> &FeedFiles {
        &self.files
    }

    /// Reads block `seq`.
    pub fn get(&self, seq: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.get_into(seq, &mut buf)?;
        Ok(buf)
    }

    /// Reads block `seq` into `buf` (replacing its contents; no allocation once `buf` is large
    /// enough).
    pub fn get_into(&self, seq: u64, buf: &mut Vec<u8>) -> Result<()> {
        if seq >= self.length {
            return Err(Error::OutOfRange {
                seq,
                length: self.length,
            });
        }
        let start = self.offsets[seq as usize];
        let end = self.offsets[seq as usize + 1];
        buf.clear();
        buf.resize((end - start) as usize, 0);
        self.files.data.read_at(start, buf).map_err(io_err("data"))
    }

    /// Appends blocks in one batch; only the last one is signed (as hypercore does).
    pub fn append<B: AsRef<[u8]>>(&mut self, blocks: &[B]) -> Result<()> {
        let Some(kp) = &self.key_pair else {
            return Err(Error::ReadOnly("no secret key for this feed"));
        };
        if blocks.is_empty() {
            return Ok(());
        }
        let k = blocks.len() as u64;
        let node_offset = 2 * self.length;
        let batch_len = 2 * k - 1;
        let mut batch = vec![0u8; (batch_len * TREE_SLOT) as usize];
        let mut extra: Vec<TreeNode> = Vec::new();
        let mut data = Vec::with_capacity(blocks.iter().map(|b| b.as_ref().len()).sum());
        let mut place = |n: &TreeNode, extra: &mut Vec<TreeNode>| {
            if n.index >= node_offset && n.index - node_offset < batch_len {
                let at = ((n.index - node_offset) * TREE_SLOT) as usize;
                batch[at..at + 32].copy_from_slice(&n.hash);
                batch[at + 32..at + 40].copy_from_slice(&n.size.to_be_bytes());
            } else {
                extra.push(*n);
            }
        };
        let leaves = crypto::leaf_hashes(blocks, &mut self.scratch);
        for b in blocks {
            data.extend_from_slice(b.as_ref());
        }
        let tree = &mut self.tree;
        tree.build(&self.roots, self.length, blocks, leaves, &mut self.scratch);
        for n in &tree.nodes[tree.new_from..] {
            place(n, &mut extra);
        }
        let roots: Vec<TreeNode> = tree.roots.iter().map(|&r| tree.nodes[r]).collect();
        let signature = kp.sign(&crypto::root_hash(&roots));
        self.files
            .data
            .write_at(self.byte_length, &data)
            .map_err(io_err("data"))?;
        self.files
            .tree
            .write_at(HEADER + node_offset * TREE_SLOT, &batch)
            .map_err(io_err("tree"))?;
        for n in &extra {
            let mut slot = [0u8; 40];
            slot[..32].copy_from_slice(&n.hash);
            slot[32..].copy_from_slice(&n.size.to_be_bytes());
            self.files
                .tree
                .write_at(HEADER + n.index * TREE_SLOT, &slot)
                .map_err(io_err("tree"))?;
        }
        self.files
            .signatures
            .write_at(HEADER + (self.length + k - 1) * SIG_SLOT, &signature)
            .map_err(io_err("signatures"))?;
        for b in blocks {
            self.byte_length += b.as_ref().len() as u64;
            self.offsets.push(self.byte_length);
            self.bitfield.set_block(self.length);
            self.bitfield.set_tree(2 * self.length);
            self.length += 1;
        }
        self.roots = roots;
        let page_size = self.bitfield.page_size() as u64;
        let file = &mut self.files.bitfield;
        self.bitfield
            .drain_updates(|j, page| file.write_at(HEADER + j * page_size, page))
            .map_err(io_err("bitfield"))?;
        Ok(())
    }

    /// Flushes every file to durable storage (files not written since their last sync cost
    /// nothing; a file's first sync after it was created also makes its name durable).
    pub fn sync(&mut self) -> Result<()> {
        self.files.key.sync().map_err(io_err("key"))?;
        self.files.secret_key.sync().map_err(io_err("secret_key"))?;
        self.files.data.sync().map_err(io_err("data"))?;
        self.files.tree.sync().map_err(io_err("tree"))?;
        self.files.signatures.sync().map_err(io_err("signatures"))?;
        self.files.bitfield.sync().map_err(io_err("bitfield"))?;
        Ok(())
    }

    /// Checks what [`Feed::verify`] does not: the whole 32-byte header of the `bitfield`,
    /// `signatures` and `tree` files, and that `secret_key`, when not empty, is the secret key
    /// of the public key in `key`.
    pub fn verify_files(&self) -> Result<()> {
        let page_size = u16::try_from(self.bitfield.page_size())
            .map_err(|_| storage_err("bitfield", "page size does not fit a header"))?;
        for (name, want) in [
            ("bitfield", sleep_header(0, page_size, "")),
            ("signatures", sleep_header(1, 64, "Ed25519")),
            ("tree", sleep_header(2, 40, "BLAKE2b")),
        ] {
            let file = self
                .files
                .by_name(name)
                .ok_or_else(|| storage_err(name, "missing"))?;
            let len = file.len().map_err(io_err(name))?;
            if len < HEADER {
                return Err(storage_err(
                    name,
                    format!("{len} bytes, shorter than the 32-byte header"),
                ));
            }
            let mut got = [0u8; HEADER as usize];
            file.read_at(0, &mut got).map_err(io_err(name))?;
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                return Err(storage_err(
                    name,
                    format!(
                        "header byte {i} is {:#04x}, expected {:#04x}",
                        got[i], want[i]
                    ),
                ));
            }
        }
        let sk_len = self.files.secret_key.len().map_err(io_err("secret_key"))?;
        if sk_len > 0 {
            if sk_len != 64 {
                return Err(storage_err(
                    "secret_key",
                    format!("{sk_len} bytes, a secret key is 64"),
                ));
            }
            let mut sk = [0u8; 64];
            self.files
                .secret_key
                .read_at(0, &mut sk)
                .map_err(io_err("secret_key"))?;
            let kp = KeyPair::from_secret_key(&sk)
                .map_err(|e| storage_err("secret_key", e.to_string()))?;
            if kp.public_key() != self.public_key {
                return Err(storage_err(
                    "secret_key",
                    "does not belong to the public key in `key`",
                ));
            }
        }
        Ok(())
    }

    /// Recomputes every tree node from the data, compares it with the `tree` file, and checks
    /// every non-blank signature against the root hash at its length (the last block must be
    /// signed). Returns the number of signatures checked.
    pub fn verify(&self) -> Result<u64> {
        let tree = self.files.tree.read_all().map_err(io_err("tree"))?;
        let sigs = self
            .files
            .signatures
            .read_all()
            .map_err(io_err("signatures"))?;
        let data = |i: u64| self.get(i);
        let check = |n: &TreeNode| -> Result<()> {
            let at = (HEADER + n.index * TREE_SLOT) as usize;
            let slot = tree
                .get(at..at + TREE_SLOT as usize)
                .ok_or_else(|| Error::Verify(format!("tree node {} is missing", n.index)))?;
            if slot[..32] != n.hash || slot[32..] != n.size.to_be_bytes() {
                return Err(Error::Verify(format!(
                    "tree node {} does not match the data",
                    n.index
                )));
            }
            Ok(())
        };
        let mut roots: Vec<TreeNode> = Vec::new();
        let mut checked = 0u64;
        for i in 0..self.length {
            let b = data(i)?;
            let leaf = TreeNode {
                index: 2 * i,
                hash: crypto::leaf_hash(&b),
                size: b.len() as u64,
            };
            check(&leaf)?;
            roots.push(leaf);
            while roots.len() >= 2 {
                let a = roots[roots.len() - 2];
                let c = roots[roots.len() - 1];
                let p = flat::parent(a.index);
                if flat::parent(c.index) != p || flat::depth(a.index) != flat::depth(c.index) {
                    break;
                }
                let node = crypto::parent(&a, &c, p);
                check(&node)?;
                roots.truncate(roots.len() - 2);
                roots.push(node);
            }
            let at = (HEADER + i * SIG_SLOT) as usize;
            let sig = sigs.get(at..at + SIG_SLOT as usize);
            match sig {
                Some(s) if s.iter().any(|&x| x != 0) => {
                    let mut sig = [0u8; 64];
                    sig.copy_from_slice(s);
                    if !crypto::verify(&self.public_key, &crypto::root_hash(&roots), &sig) {
                        return Err(Error::Verify(format!("signature of block {i} is wrong")));
                    }
                    checked += 1;
                }
                _ if i + 1 == self.length => {
                    return Err(Error::Verify(format!("the last block ({i}) is not signed")));
                }
                _ => {}
            }
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches of many sizes (odd, powers of two, one) make the same merkle tree as one block
    /// per append (the signatures differ: only a batch's last block is signed), and the tree
    /// checks against the data.
    #[test]
    fn batched_appends_make_the_tree_of_single_appends() {
        let kp = KeyPair::from_seed(&[3; 32]);
        let new_feed = || {
            Feed::create(FeedFiles::memory(), Some(kp.clone()), kp.public_key(), true)
                .expect("memory feed")
        };
        let blocks: Vec<Vec<u8>> = (0..400usize)
            .map(|i| vec![i as u8; (i * 37) % 300])
            .collect();
        let mut single = new_feed();
        for b in &blocks {
            single.append(&[b]).expect("append");
        }
        let mut batched = new_feed();
        let mut at = 0;
        for n in [
            1, 2, 3, 1, 5, 8, 13, 21, 34, 55, 7, 64, 1, 16, 17, 31, 32, 33,
        ]
        .iter()
        .cycle()
        {
            let end = (at + n).min(blocks.len());
            batched.append(&blocks[at..end]).expect("append");
            at = end;
            if at == blocks.len() {
                break;
            }
        }
        let tree = |f: &Feed| f.files().tree.read_all().expect("tree");
        assert_eq!(tree(&single), tree(&batched));
        assert_eq!(single.roots, batched.roots);
        batched.verify().expect("the tree matches the data");
    }
}
