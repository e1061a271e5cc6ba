//! The `centidb` codec (being written: see issue 2).
