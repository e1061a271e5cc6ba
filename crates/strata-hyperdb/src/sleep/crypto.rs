//! hypercore@6 crypto: BLAKE2b-256 merkle hashes, Ed25519 key pairs and signatures.

use blake2::digest::consts::U32;
use blake2::digest::{FixedOutput, Mac};
use blake2::{Blake2b, Blake2bMac, Digest};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use smallvec::SmallVec;

use crate::error::{Error, Result};
#[cfg(feature = "aws-lc")]
use std::sync::Arc;

type Blake2b256 = Blake2b<U32>;

/// A merkle tree node: flat-tree index, BLAKE2b-256 hash, bytes spanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeNode {
    /// Flat-tree index.
    pub index: u64,
    /// Node hash.
    pub hash: [u8; 32],
    /// Total size of the blocks under the node.
    pub size: u64,
}

/// `BLAKE2b-256(0x00 ‖ u64be(len) ‖ data)`.
pub fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Blake2b256::new();
    h.update([0u8]);
    h.update((data.len() as u64).to_be_bytes());
    h.update(data);
    h.finalize().into()
}

/// [`leaf_hash`] of every block, in order. Two or more blocks are hashed several at a time
/// (`blake2b_simd::many`: four BLAKE2b states in one pass of AVX2 where the CPU has it, about
/// twice the throughput of one hash after another for blocks of a few hundred bytes); one
/// block goes through [`leaf_hash`]. `scratch` holds each block's hash input
/// (`0x00 ‖ u64be(len) ‖ data`) while they are hashed.
pub fn leaf_hashes<B: AsRef<[u8]>>(blocks: &[B], scratch: &mut Vec<u8>) -> Vec<[u8; 32]> {
    if blocks.len() < 2 {
        return blocks.iter().map(|b| leaf_hash(b.as_ref())).collect();
    }
    hash_chunks(blocks, scratch, |b, out| {
        let b = b.as_ref();
        out.push(0);
        out.extend_from_slice(&(b.len() as u64).to_be_bytes());
        out.extend_from_slice(b);
    })
}

/// Blocks hashed per call of `blake2b_simd::many::hash_many` in [`leaf_hashes`] (four lanes
/// of AVX2, four times).
const LEAF_CHUNK: usize = 16;

/// The hashes of the parents of `pairs` (left, right), as [`parent`] computes them, several at
/// a time for two or more pairs (as [`leaf_hashes`]). `scratch` holds the hash inputs.
pub fn parent_hashes(pairs: &[(TreeNode, TreeNode)], scratch: &mut Vec<u8>) -> Vec<[u8; 32]> {
    if pairs.len() < 2 {
        return pairs.iter().map(|(a, b)| parent(a, b, 0).hash).collect();
    }
    hash_chunks(pairs, scratch, |(a, b), out| {
        out.push(1);
        out.extend_from_slice(&(a.size + b.size).to_be_bytes());
        out.extend_from_slice(&a.hash);
        out.extend_from_slice(&b.hash);
    })
}

/// BLAKE2b-256 of the input `input(item)` writes for each item, [`LEAF_CHUNK`] items per call
/// of `blake2b_simd::many::hash_many`.
fn hash_chunks<T>(
    items: &[T],
    scratch: &mut Vec<u8>,
    mut input: impl FnMut(&T, &mut Vec<u8>),
) -> Vec<[u8; 32]> {
    let mut params = blake2b_simd::Params::new();
    params.hash_length(32);
    let mut out = Vec::with_capacity(items.len());
    // A few items at a time: the jobs (about 100 bytes each) and the inputs stay small, no
    // large allocation (and its fresh pages) per batch.
    for chunk in items.chunks(LEAF_CHUNK) {
        scratch.clear();
        let mut ends = [0usize; LEAF_CHUNK];
        for (item, end) in chunk.iter().zip(&mut ends) {
            input(item, scratch);
            *end = scratch.len();
        }
        let mut start = 0;
        let mut jobs: SmallVec<[blake2b_simd::many::HashManyJob<'_>; LEAF_CHUNK]> = ends
            [..chunk.len()]
            .iter()
            .map(|&end| {
                let job = blake2b_simd::many::HashManyJob::new(&params, &scratch[start..end]);
                start = end;
                job
            })
            .collect();
        blake2b_simd::many::hash_many(jobs.iter_mut());
        out.extend(jobs.iter().map(|job| {
            let mut h = [0u8; 32];
            h.copy_from_slice(job.to_hash().as_bytes());
            h
        }));
    }
    out
}

/// The parent of two sibling nodes (`a` the left one).
pub fn parent(a: &TreeNode, b: &TreeNode, index: u64) -> TreeNode {
    let size = a.size + b.size;
    let mut h = Blake2b256::new();
    h.update([1u8]);
    h.update(size.to_be_bytes());
    h.update(a.hash);
    h.update(b.hash);
    TreeNode {
        index,
        hash: h.finalize().into(),
        size,
    }
}

/// `BLAKE2b-256(0x02 ‖ Σ hash ‖ u64be(index) ‖ u64be(size))` over the roots: what is signed.
pub fn root_hash(roots: &[TreeNode]) -> [u8; 32] {
    let mut h = Blake2b256::new();
    h.update([2u8]);
    for r in roots {
        h.update(r.hash);
        h.update(r.index.to_be_bytes());
        h.update(r.size.to_be_bytes());
    }
    h.finalize().into()
}

/// `BLAKE2b-256(key = public key, "hypercore")`: the discovery key (names content feed dirs).
pub fn discovery_key(public_key: &[u8; 32]) -> [u8; 32] {
    let mut m = <Blake2bMac<U32> as Mac>::new_from_slice(public_key)
        .expect("32-byte key is valid for BLAKE2b");
    m.update(b"hypercore");
    m.finalize_fixed().into()
}

/// hyperdb's content-feed seed: libsodium `crypto_kdf_derive_from_key(32, 1, "hyperdb1", sk[..32])`.
pub fn content_feed_seed(secret_key: &[u8; 64]) -> [u8; 32] {
    let mut salt = [0u8; 16];
    salt[..8].copy_from_slice(&1u64.to_le_bytes());
    let mut persona = [0u8; 16];
    persona[..8].copy_from_slice(b"hyperdb1");
    let m = Blake2bMac::<U32>::new_with_salt_and_personal(&secret_key[..32], &salt, &persona)
        .expect("key, salt and persona lengths are valid");
    m.finalize_fixed().into()
}

/// An Ed25519 key pair in libsodium's layout.
///
/// Signing is the cost of every append (one signature per put or batch). With the `aws-lc`
/// feature (default) signatures are made by AWS-LC, about twice as fast as ed25519-dalek on
/// x86-64; Ed25519 signatures are deterministic, so both give the same bytes (tested), and
/// ed25519-dalek signs whenever AWS-LC refuses the seed.
#[derive(Clone)]
pub struct KeyPair {
    signing: SigningKey,
    #[cfg(feature = "aws-lc")]
    fast: Option<Arc<aws_lc_rs::signature::Ed25519KeyPair>>,
}

impl KeyPair {
    /// The key pair of a 32-byte seed (`crypto_sign_seed_keypair`).
    pub fn from_seed(seed: &[u8; 32]) -> KeyPair {
        let signing = SigningKey::from_bytes(seed);
        KeyPair {
            #[cfg(feature = "aws-lc")]
            fast: fast_key(seed, &signing),
            signing,
        }
    }

    /// The ed25519-dalek signing key.
    pub fn signing_key(&self) -> &SigningKey {
        &self.signing
    }

    /// True when signatures are made by AWS-LC (the `aws-lc` feature, and a seed it took).
    pub fn signs_with_aws_lc(&self) -> bool {
        #[cfg(feature = "aws-lc")]
        {
            self.fast.is_some()
        }
        #[cfg(not(feature = "aws-lc"))]
        {
            false
        }
    }

    /// A fresh random key pair.
    pub fn generate() -> Result<KeyPair> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| Error::Invalid(format!("no randomness: {e}")))?;
        Ok(KeyPair::from_seed(&seed))
    }

    /// From a 64-byte libsodium secret key (`seed ‖ public key`); the halves must agree.
    pub fn from_secret_key(sk: &[u8]) -> Result<KeyPair> {
        let sk: &[u8; 64] = sk
            .try_into()
            .map_err(|_| Error::Invalid(format!("a secret key is 64 bytes, not {}", sk.len())))?;
        let mut seed = [0u8; 32];
        seed.copy_from_slice(&sk[..32]);
        let kp = KeyPair::from_seed(&seed);
        if kp.public_key()[..] != sk[32..] {
            return Err(Error::Invalid(
                "the secret key's public half does not match its seed".into(),
            ));
        }
        Ok(kp)
    }

    /// The 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.signing.verifying_key().to_bytes()
    }

    /// The 64-byte libsodium secret key.
    pub fn secret_key(&self) -> [u8; 64] {
        self.signing.to_keypair_bytes()
    }

    /// Signs `msg`.
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        #[cfg(feature = "aws-lc")]
        if let Some(k) = &self.fast {
            if let Ok(sig) = <[u8; 64]>::try_from(k.sign(msg).as_ref()) {
                return sig;
            }
        }
        self.signing.sign(msg).to_bytes()
    }
}

/// AWS-LC's key pair of `seed`, when it has the same public key as ed25519-dalek's.
#[cfg(feature = "aws-lc")]
fn fast_key(
    seed: &[u8; 32],
    signing: &SigningKey,
) -> Option<Arc<aws_lc_rs::signature::Ed25519KeyPair>> {
    use aws_lc_rs::signature::KeyPair as _;
    let k = aws_lc_rs::signature::Ed25519KeyPair::from_seed_unchecked(seed).ok()?;
    (k.public_key().as_ref() == signing.verifying_key().as_bytes()).then(|| Arc::new(k))
}

/// Checks an Ed25519 signature.
pub fn verify(public_key: &[u8; 32], msg: &[u8], sig: &[u8; 64]) -> bool {
    let Ok(vk) = VerifyingKey::from_bytes(public_key) else {
        return false;
    };
    vk.verify(msg, &Signature::from_bytes(sig)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block sizes around BLAKE2b's 128-byte block edges (the hash input is the block
    /// plus 9 bytes), in batches of every length up to nine (the SIMD lanes' remainders) and
    /// around the chunk length.
    #[test]
    fn leaf_hashes_are_leaf_hash_of_each_block() {
        let sizes = [0usize, 1, 118, 119, 120, 150, 246, 247, 248, 1000, 4096];
        let mut scratch = Vec::new();
        for n in (0..=9).chain([15, 16, 17, 33, 40]) {
            for first in 0..sizes.len() {
                let blocks: Vec<Vec<u8>> = (0..n)
                    .map(|i| {
                        let len = sizes[(first + i) % sizes.len()];
                        (0..len).map(|j| (j * 31 + i * 7 + n) as u8).collect()
                    })
                    .collect();
                let want: Vec<[u8; 32]> = blocks.iter().map(|b| leaf_hash(b)).collect();
                assert_eq!(leaf_hashes(&blocks, &mut scratch), want, "{n} blocks");
            }
        }
    }

    #[test]
    fn leaf_hash_is_hypercores() {
        // BLAKE2b-256(0x00 ‖ u64be(5) ‖ "hello"), computed by another implementation
        // (Python: `hashlib.blake2b(b"\0" + struct.pack(">Q", 5) + b"hello", digest_size=32)`).
        let want = "6717b25f24d96ccbc95166bacbb671d59eb4263ee5e1aa0f6b1520815cbee80b";
        assert_eq!(hex::encode(leaf_hash(b"hello")), want);
    }
}
