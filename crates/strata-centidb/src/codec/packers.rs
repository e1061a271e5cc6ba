//! The packers: `plain`, `zlib` (built in to centidb), and `bz2`, `zstd`, `lz4`.
//!
//! Decompression is bounded: a packer never produces more than the caller's `limit`
//! (a batch knows its exact unpacked size from its header), so a hostile record cannot make
//! the store allocate without bound.

use std::io::{Read, Write};

use super::Packer;
use crate::error::{Error, Result};

fn too_big(name: &str, limit: usize) -> Error {
    Error::encoding(name, format!("unpacks to more than {limit} bytes"))
}

/// Reads all of `r` into a vector, failing beyond `limit` bytes.
fn read_bounded(name: &str, r: impl Read, limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::encoding(name, format!("corrupt data: {e}")))?;
    if out.len() > limit {
        return Err(too_big(name, limit));
    }
    Ok(out)
}

/// No compression.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Packer for Plain {
    fn name(&self) -> &str {
        "plain"
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>> {
        Ok(data.to_vec())
    }

    fn unpack(&self, data: &[u8], limit: usize) -> Result<Vec<u8>> {
        if data.len() > limit {
            return Err(too_big("plain", limit));
        }
        Ok(data.to_vec())
    }
}

/// `zlib.compress` at level 6 (byte-identical to zlib 1.2.13's output).
#[derive(Debug, Clone, Copy, Default)]
pub struct Zlib;

impl Packer for Zlib {
    fn name(&self) -> &str {
        "zlib"
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>> {
        let mut e = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(data.len() / 2 + 16),
            flate2::Compression::new(6),
        );
        e.write_all(data)
            .and_then(|()| e.finish())
            .map_err(|e| Error::encoding("zlib", e.to_string()))
    }

    fn unpack(&self, data: &[u8], limit: usize) -> Result<Vec<u8>> {
        let mut d = flate2::bufread::ZlibDecoder::new(data);
        let out = read_bounded("zlib", &mut d, limit)?;
        if !d.into_inner().is_empty() {
            return Err(Error::encoding(
                "zlib",
                "trailing bytes after the compressed stream",
            ));
        }
        Ok(out)
    }
}

/// `bz2.compress` at level 9 (a user packer to the original; same bytes as libbzip2).
#[derive(Debug, Clone, Copy, Default)]
pub struct Bz2;

impl Packer for Bz2 {
    fn name(&self) -> &str {
        "bz2"
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        e.write_all(data)
            .and_then(|()| e.finish())
            .map_err(|e| Error::encoding("bz2", e.to_string()))
    }

    fn unpack(&self, data: &[u8], limit: usize) -> Result<Vec<u8>> {
        let mut d = bzip2::bufread::BzDecoder::new(data);
        let out = read_bounded("bz2", &mut d, limit)?;
        if !d.into_inner().is_empty() {
            return Err(Error::encoding(
                "bz2",
                "trailing bytes after the compressed stream",
            ));
        }
        Ok(out)
    }
}

/// Zstandard (one frame, level 3 by default).
#[derive(Debug, Clone, Copy)]
pub struct Zstd {
    /// Compression level (1..=22).
    pub level: i32,
}

impl Default for Zstd {
    fn default() -> Zstd {
        Zstd { level: 3 }
    }
}

impl Packer for Zstd {
    fn name(&self) -> &str {
        "zstd"
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>> {
        zstd::bulk::compress(data, self.level).map_err(|e| Error::encoding("zstd", e.to_string()))
    }

    fn unpack(&self, data: &[u8], limit: usize) -> Result<Vec<u8>> {
        let mut d = zstd::stream::read::Decoder::with_buffer(data)
            .map_err(|e| Error::encoding("zstd", e.to_string()))?
            .single_frame();
        let out = read_bounded("zstd", &mut d, limit)?;
        if !d.finish().is_empty() {
            return Err(Error::encoding("zstd", "trailing bytes after the frame"));
        }
        Ok(out)
    }
}

/// LZ4 block format with its length as a 4-byte little-endian prefix.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4;

impl Packer for Lz4 {
    fn name(&self) -> &str {
        "lz4"
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>> {
        Ok(lz4_flex::block::compress_prepend_size(data))
    }

    fn unpack(&self, data: &[u8], limit: usize) -> Result<Vec<u8>> {
        let (size, block) = data
            .split_first_chunk::<4>()
            .ok_or_else(|| Error::encoding("lz4", "missing the 4-byte length"))?;
        let size = u32::from_le_bytes(*size) as usize;
        if size > limit {
            return Err(too_big("lz4", limit));
        }
        let mut out = vec![0u8; size];
        let n = lz4_flex::block::decompress_into(block, &mut out)
            .map_err(|e| Error::encoding("lz4", e.to_string()))?;
        if n != size {
            return Err(Error::encoding(
                "lz4",
                format!("block unpacks to {n} bytes, its length says {size}"),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zlib_and_bz2_match_the_originals_bytes() {
        // Vector 04: the zlib batch of log 4..6 and the bz2 batch of grouped.
        let p = hex::decode(
            "150432b6d9aeb79b85cee5908d8028b89c8e8780150532b6d9aeb79b85cee5908da028b89c8e8783c0\
             150632b6d9aeb79b85cee5908dc028b89c8e8783c1e0",
        )
        .unwrap();
        let z = Zlib.pack(&p).unwrap();
        assert_eq!(
            hex::encode(&z),
            "789c136531da7673ddf6d9ade79e4ee86dd0d831a7afbd419415496c0158acf980281b92e00188e0c1\
             070034d9230b"
        );
        assert_eq!(Zlib.unpack(&z, p.len()).unwrap(), p);
        assert!(Zlib.unpack(&z, p.len() - 1).is_err());
        let p2 =
            hex::decode("32b0c0150232bb98a6a032b0c0150332bb98a6b032b180150132bb98c690").unwrap();
        let b = Bz2.pack(&p2).unwrap();
        assert_eq!(
            hex::encode(&b),
            "425a6839314159265359cfd32060000003687c380002001000400040404100600841002000219464\
             610f50a600018ebc22b9133d48a43081a0df177245385090cfd32060"
        );
        assert_eq!(Bz2.unpack(&b, 1000).unwrap(), p2);
    }

    #[test]
    fn every_packer_round_trips_and_refuses_garbage() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let packers: [&dyn Packer; 5] = [&Plain, &Zlib, &Bz2, &Zstd::default(), &Lz4];
        for p in packers {
            let c = p.pack(&data).unwrap();
            assert_eq!(p.unpack(&c, data.len()).unwrap(), data, "{}", p.name());
            assert!(p.unpack(&c, data.len() - 1).is_err(), "{}", p.name());
            if p.name() != "plain" {
                assert!(
                    p.unpack(b"\xff\xff\xff\x7fgarbage", 1 << 20).is_err(),
                    "{}",
                    p.name()
                );
                let mut trailing = c.clone();
                trailing.push(0);
                assert!(p.unpack(&trailing, data.len()).is_err(), "{}", p.name());
            }
        }
    }
}
