//! Integer elements read as a type of at most 64 bits (`i8`…`i64`, `u8`…`u64`): the common
//! case inline with no error plumbing, everything else out of line.
//!
//! [`De::int_fast`] reads an integer whose magnitude fits a `u64` as the magnitude and a sign
//! word, and the range check of the target type is done on those (one comparison) instead of
//! on an `i128`. Every other element, every damaged one and every error goes to
//! [`KeyDeserializer::int_general`], which is the deserializer's general [`De::int`], so the
//! results and errors are those of the general path (checked by
//! `int_fast_agrees_with_int_general` against the plain deserializer).

use super::*;

/// A fixed-width integer type of at most 64 bits.
pub(super) trait Int64: Sized + TryFrom<i128> {
    /// The type's name, for the out-of-range error.
    const NAME: &'static str;
    /// The integer of magnitude `m` and sign word `neg` (0, or `u64::MAX` for the value
    /// `!m`), if it is in the type's range.
    fn from_magnitude(m: u64, neg: u64) -> Option<Self>;
}

macro_rules! int64_signed {
    ($($t:ty),*) => {$(
        impl Int64 for $t {
            const NAME: &'static str = stringify!($t);
            #[inline(always)]
            fn from_magnitude(m: u64, neg: u64) -> Option<$t> {
                // `!m ≥ MIN` ⇔ `m ≤ −1 − MIN = MAX`, the same bound as for `m` itself; the
                // low bits of `m ^ neg` are then the value's two's complement.
                (m <= <$t>::MAX as u64).then_some((m ^ neg) as $t)
            }
        }
    )*};
}

macro_rules! int64_unsigned {
    ($($t:ty),*) => {$(
        impl Int64 for $t {
            const NAME: &'static str = stringify!($t);
            #[inline(always)]
            fn from_magnitude(m: u64, neg: u64) -> Option<$t> {
                (neg == 0 && m <= <$t>::MAX as u64).then_some(m as $t)
            }
        }
    )*};
}

int64_signed!(i8, i16, i32, i64);
int64_unsigned!(u8, u16, u32, u64);

/// The `i128` of magnitude `m` and sign word `neg` (for the out-of-range error).
#[inline]
fn wide(m: u64, neg: u64) -> i128 {
    ((u128::from(neg) << 64) | u128::from(m ^ neg)) as i128
}

impl<'de, L: Level> De<'_, 'de, L> {
    /// An integer element as the magnitude and the sign word of
    /// [`Reader::int_fast_at`], or `None` (nothing consumed) for every element that function
    /// leaves to the general path. As in [`De::int`], the direction comes from the tag byte
    /// at the top level and from the reader's mask when nested.
    #[inline(always)]
    fn int_fast(&mut self) -> Option<(u64, u64)> {
        if !Self::NESTED {
            // The direction from the raw byte's table entry, not from `sar`/`xor` before
            // the table load; as in `int_fast_with`, a top-level element leaves no mask set.
            let at = self.d.r.pos;
            let raw = *self.d.r.bytes().get(at)?;
            let (m, neg, p) = self.d.r.int_fast_at_raw(at, raw)?;
            self.d.r.pos = at + 1 + p;
            self.d.r.mask = 0;
            return Some((m, neg));
        }
        self.int_fast_with(Reader::int_fast_at)
    }

    /// [`De::int_fast`] with the reader's `read` ([`Reader::int_fast_at`] or
    /// [`Reader::int_fast_at_end`]).
    #[inline(always)]
    fn int_fast_with(
        &mut self,
        read: impl FnOnce(&Reader<'de>, usize, u8, u8) -> Option<(u64, u64, usize)>,
    ) -> Option<(u64, u64)> {
        let at = self.d.r.pos;
        let raw = *self.d.r.bytes().get(at)?;
        let nested = Self::NESTED;
        let mask = if nested {
            self.d.r.mask
        } else {
            ((raw as i8) >> 7) as u8
        };
        let (m, neg, p) = read(&self.d.r, at, raw ^ mask, mask)?;
        self.d.r.pos = at + 1 + p;
        // As in `De::int`: a top-level element leaves no mask set.
        self.d.r.mask = mask & (nested as u8).wrapping_neg();
        Some((m, neg))
    }

    /// An integer element read as `T` (at most 64 bits) and handed to `visit`.
    #[inline(always)]
    pub(super) fn int64<T: Int64, R>(&mut self, visit: impl FnOnce(T) -> Result<R>) -> Result<R> {
        let at = self.d.r.pos;
        let Some((m, neg)) = self.int_fast() else {
            return visit(self.d.int_general::<L, T>()?);
        };
        match T::from_magnitude(m, neg) {
            Some(v) => visit(v),
            None => Err(self.d.out_of_range(at, wide(m, neg), T::NAME)),
        }
    }
}

impl KeyDeserializer<'_> {
    /// An integer element at level `L` read as `T` by the general [`De::int`]: every element
    /// that [`De::int_fast`] does not read, and every error. First the fast read near the
    /// key's end ([`Reader::int_fast_at_end`]: a key ending in an integer), which leaves
    /// everything else, with nothing consumed, to [`De::int`].
    #[inline(never)]
    fn int_general<L: Level, T: Int64>(&mut self) -> Result<T> {
        let at = self.r.pos;
        if let Some((m, neg)) = De::<L>::new(self).int_fast_with(Reader::int_fast_at_end) {
            return match T::from_magnitude(m, neg) {
                Some(v) => Ok(v),
                None => Err(self.out_of_range(at, wide(m, neg), T::NAME)),
            };
        }
        let v = De::<L>::new(self).int()?;
        T::try_from(v).map_err(|_| self.out_of_range(at, v, T::NAME))
    }
}
