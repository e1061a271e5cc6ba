//! Line-oriented input (`kv load`, `table put`, `hyperdb apply`): lines are read as bytes, each
//! at most [`MAX_LINE_BYTES`] long, and numbered from 1, so that every error can name its line
//! and a command can keep (commit) the lines before a bad one.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

/// Longest input line accepted, in bytes, not counting the line end: 16 MiB. A longer line is
/// an error naming it (the input is never read into memory whole).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A failure to read a line.
#[derive(Debug)]
pub enum LineError {
    /// The line is longer than the limit.
    TooLong {
        /// Line number (from 1).
        line: u64,
        /// The limit in bytes.
        max: usize,
    },
    /// Reading failed.
    Io {
        /// Line number (from 1).
        line: u64,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::TooLong { line, max } => {
                write!(f, "line {line}: longer than the limit of {max} bytes")
            }
            LineError::Io { line, source } => write!(f, "line {line}: cannot read: {source}"),
        }
    }
}

/// Numbered lines of a byte stream.
pub struct Lines<R> {
    input: BufReader<R>,
    buf: Vec<u8>,
    line_no: u64,
    max: usize,
}

impl<R: Read> Lines<R> {
    /// Lines of `input`, at most [`MAX_LINE_BYTES`] each.
    pub fn new(input: R) -> Lines<R> {
        Lines::with_limit(input, MAX_LINE_BYTES)
    }

    /// Lines of `input`, at most `max` bytes each.
    pub fn with_limit(input: R, max: usize) -> Lines<R> {
        Lines {
            input: BufReader::with_capacity(1 << 16, input),
            buf: Vec::new(),
            line_no: 0,
            max,
        }
    }

    /// True when input is already buffered (more lines are waiting without blocking).
    pub fn has_buffered(&self) -> bool {
        !self.input.buffer().is_empty()
    }

    /// The next line's number (from 1) and bytes without its `\n` (a `\r` before it is
    /// kept), or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, LineError> {
        self.buf.clear();
        let line = self.line_no + 1;
        let mut read_any = false;
        loop {
            let avail = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(LineError::Io { line, source }),
            };
            if avail.is_empty() {
                if !read_any {
                    return Ok(None);
                }
                break;
            }
            read_any = true;
            let (take, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > self.max {
                self.line_no = line;
                return Err(LineError::TooLong {
                    line,
                    max: self.max,
                });
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.input.consume(take + usize::from(done));
            if done {
                break;
            }
        }
        self.line_no = line;
        Ok(Some((line, &self.buf)))
    }
}

/// The line as UTF-8 text, or an error naming the line and the first bad byte.
pub fn utf8(line: &[u8], line_no: u64) -> Result<&str, String> {
    std::str::from_utf8(line).map_err(|e| {
        format!(
            "line {line_no}: not UTF-8 (invalid byte at column {})",
            e.valid_up_to() + 1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> (Vec<Vec<u8>>, Option<String>) {
        let mut l = Lines::with_limit(input, max);
        let mut out = Vec::new();
        loop {
            match l.next_line() {
                Ok(Some((n, x))) => {
                    assert_eq!(n as usize, out.len() + 1);
                    out.push(x.to_vec())
                }
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn splits_numbers_and_limits_lines() {
        assert_eq!(all(b"", 10), (vec![], None));
        assert_eq!(all(b"\n", 10), (vec![vec![]], None));
        assert_eq!(
            all(b"a\r\n\nbc", 10),
            (vec![b"a\r".to_vec(), vec![], b"bc".to_vec()], None)
        );
        assert_eq!(all(b"\xff\x00\n", 10), (vec![b"\xff\x00".to_vec()], None));
        // Exactly the limit is fine; one more byte is an error naming the line.
        assert_eq!(all(b"abc\nabcd\n", 4).1, None);
        let (ok, err) = all(b"abc\nabcde\nx\n", 4);
        assert_eq!(ok, vec![b"abc".to_vec()]);
        assert_eq!(
            err.as_deref(),
            Some("line 2: longer than the limit of 4 bytes")
        );
        assert_eq!(
            utf8(b"ab\xffc", 3).unwrap_err(),
            "line 3: not UTF-8 (invalid byte at column 3)"
        );
    }

    #[test]
    fn a_long_line_is_refused_without_reading_it_whole() {
        // A line far longer than the reader's buffer, read in pieces.
        let big = vec![b'x'; 1 << 20];
        let mut l = Lines::with_limit(&big[..], 1000);
        assert!(matches!(
            l.next_line(),
            Err(LineError::TooLong { line: 1, max: 1000 })
        ));
        assert!(l.buf.capacity() < 1 << 17, "{}", l.buf.capacity());
    }
}
