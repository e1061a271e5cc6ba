//! The input and output formats of the `strata` command line, as a library so that tests and
//! fuzz targets reach them: numbered, length-limited input lines ([`lines`]) and the JSON line
//! of a key-value record that `kv scan` prints and `kv load` reads ([`record`]).

pub mod lines;
pub mod record;
