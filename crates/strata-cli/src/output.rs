//! The one output path of the command line. Every command writes stdout through [`Out`], and
//! every failed stdout write becomes a [`CliError`] through [`stdout_err`]: a reader that went
//! away (EPIPE, `strata kv scan | head -1`) is the quiet [`CliError::closed`] (no message, exit
//! code [`EXIT_CLOSED`]), any other failure one line naming stdout (exit code 1).
//!
//! SIGPIPE stays ignored in the whole process (Rust's runtime sets that before `main`), so a
//! closed stdout, a client hanging up on `strata serve` or an etcd member going away are all
//! ordinary write errors that the code handles, never a signal that kills the process
//! wherever it happens to write. Messages on stderr go through [`warn`], which never panics.

use std::fmt::Display;
use std::io::{self, BufWriter, StdoutLock, Write};

use crate::CliError;

/// Exit code when stdout was closed before everything was written: 141, the status a shell
/// shows for a process killed by SIGPIPE (128 + 13), as `cat` or `grep` end in `… | head`.
/// Not 0: the output is incomplete (a `kv load --ack` whose acknowledgements go nowhere stops
/// before the rest of its input), and `set -o pipefail` scripts can tell it from success.
pub const EXIT_CLOSED: u8 = 141;

/// The error for a failed write to stdout: [`CliError::closed`] when the reader is gone
/// (`BrokenPipe`), otherwise a failure saying that stdout could not be written.
pub fn stdout_err(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::closed()
    } else {
        CliError::failure(format!("cannot write to stdout: {e}"))
    }
}

/// One line on stderr (`strata: …` messages). A failure to write it is ignored: stderr is the
/// channel errors are reported on, so there is nowhere left to report it (`eprintln!` would
/// panic instead).
pub fn warn(line: impl Display) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Buffered stdout (or any writer, for tests). Lines are written with [`Out::line`]; call
/// [`Out::flush`] at the end (or after each line that acknowledges something). Dropping it
/// unflushed, on an error path, still writes what is buffered (errors ignored), so the output
/// of the lines before a bad input line is not lost.
pub struct Out<W: Write = StdoutLock<'static>> {
    w: BufWriter<W>,
}

impl Out {
    /// Buffered, locked stdout.
    pub fn stdout() -> Out {
        Out::new(io::stdout().lock())
    }
}

impl<W: Write> Out<W> {
    /// Buffered output into `w`.
    pub fn new(w: W) -> Out<W> {
        Out {
            w: BufWriter::with_capacity(1 << 16, w),
        }
    }

    /// Writes `line` and a `\n`.
    pub fn line(&mut self, line: impl Display) -> Result<(), CliError> {
        writeln!(self.w, "{line}").map_err(stdout_err)
    }

    /// Writes raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> Result<(), CliError> {
        self.w.write_all(b).map_err(stdout_err)
    }

    /// Runs a writer function (such as [`strata_cli::record::write_record`]) on the output.
    pub fn with(
        &mut self,
        f: impl FnOnce(&mut BufWriter<W>) -> io::Result<()>,
    ) -> Result<(), CliError> {
        f(&mut self.w).map_err(stdout_err)
    }

    /// Writes everything buffered through to the underlying writer.
    pub fn flush(&mut self) -> Result<(), CliError> {
        self.w.flush().map_err(stdout_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts `room` bytes, then fails every write with `kind`.
    struct Failing {
        room: usize,
        kind: io::ErrorKind,
        got: Vec<u8>,
    }

    impl Write for Failing {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::from(self.kind));
            }
            let n = b.len().min(self.room);
            self.room -= n;
            self.got.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn write_lines(kind: io::ErrorKind, room: usize) -> (Result<(), CliError>, Vec<u8>) {
        let mut f = Failing {
            room,
            kind,
            got: Vec::new(),
        };
        let r = {
            let mut out = Out::new(&mut f);
            (|| {
                for i in 0..100_000 {
                    out.line(format_args!("line {i}"))?;
                }
                out.bytes(b"end\n")?;
                out.flush()
            })()
        };
        (r, f.got)
    }

    #[test]
    fn a_closed_reader_is_the_quiet_exit_other_errors_name_stdout() {
        let (r, got) = write_lines(io::ErrorKind::BrokenPipe, 10);
        let e = r.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (EXIT_CLOSED, ""));
        assert_eq!(got, b"line 0\nlin");
        let (r, _) = write_lines(io::ErrorKind::StorageFull, 0);
        let e = r.unwrap_err();
        assert_eq!(e.code, 1);
        assert!(e.message.starts_with("cannot write to stdout: "), "{e:?}");
        let (r, got) = write_lines(io::ErrorKind::BrokenPipe, usize::MAX);
        assert!(r.is_ok());
        assert!(got.ends_with(b"line 99999\nend\n"));
    }

    #[test]
    fn dropping_unflushed_output_writes_it() {
        let mut v = Vec::new();
        {
            let mut out = Out::new(&mut v);
            out.line("kept").unwrap();
            out.with(|w| w.write_all(b"x\n")).unwrap();
        }
        assert_eq!(v, b"kept\nx\n");
    }
}
