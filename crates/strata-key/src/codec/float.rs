//! The order-preserving float transform shared by the native, FoundationDB and SKV codecs:
//! IEEE 754 bits, all flipped for negative numbers and only the sign bit flipped otherwise, so
//! that unsigned order is IEEE `totalOrder` (−NaN < −∞ < … < −0.0 < +0.0 < … < +∞ < +NaN).

/// Ordered bits of an f64.
#[inline]
pub(crate) fn ordered_f64(f: f64) -> u64 {
    let b = f.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b ^ (1 << 63)
    }
}

/// Inverse of [`ordered_f64`].
#[inline]
pub(crate) fn unordered_f64(u: u64) -> f64 {
    f64::from_bits(if u >> 63 == 1 { u ^ (1 << 63) } else { !u })
}

/// Ordered bits of an f32.
#[inline]
pub(crate) fn ordered_f32(f: f32) -> u32 {
    let b = f.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b ^ (1 << 31)
    }
}

/// Inverse of [`ordered_f32`].
#[inline]
pub(crate) fn unordered_f32(u: u32) -> f32 {
    f32::from_bits(if u >> 31 == 1 { u ^ (1 << 31) } else { !u })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_order_and_inverse() {
        let xs = [
            f64::from_bits(u64::MAX),
            f64::NEG_INFINITY,
            -1.0,
            -0.0,
            0.0,
            1.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in xs.windows(2) {
            assert!(ordered_f64(w[0]) < ordered_f64(w[1]));
        }
        for x in xs {
            assert_eq!(unordered_f64(ordered_f64(x)).to_bits(), x.to_bits());
            let y = x as f32;
            assert_eq!(unordered_f32(ordered_f32(y)).to_bits(), y.to_bits());
        }
    }
}
