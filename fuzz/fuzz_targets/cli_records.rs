#![no_main]
//! Line-oriented input of the command line: untrusted bytes split into numbered lines with a
//! length limit, each parsed as a `kv load` record (text and hex modes). Never panics; a
//! parsed record written back in the `kv scan` format is one line and parses to the same bytes.

use libfuzzer_sys::fuzz_target;
use strata_cli::lines::{utf8, Lines};
use strata_cli::record::{parse_record, write_record};

fuzz_target!(|data: &[u8]| {
    let mut lines = Lines::with_limit(data, 256);
    let mut expected = 1;
    while let Ok(Some((no, line))) = lines.next_line() {
        assert_eq!(no, expected);
        expected += 1;
        assert!(line.len() <= 256 && !line.contains(&b'\n'));
        let Ok(text) = utf8(line, no) else { continue };
        for hex in [false, true] {
            if let Ok((k, v)) = parse_record(text, hex) {
                let mut out = Vec::new();
                write_record(&mut out, &k, &v, hex).unwrap();
                assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
                let again = std::str::from_utf8(&out).unwrap();
                assert_eq!(parse_record(again.trim_end(), hex).unwrap(), (k, v));
            }
        }
    }
});
