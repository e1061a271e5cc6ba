//! The `fdb` codec (being written: see issue 2).
