//! The `skv` codec (being written: see issue 2).
