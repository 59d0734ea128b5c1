//! Finding a byte among a Node16's 16 sorted keys.
//!
//! One function, [`find_byte16`], with two bodies: SSE2 on x86-64 (compare all 16 lanes, mask
//! off the unused ones, take the lowest set bit) and a portable scan. SSE2 is part of the x86-64
//! baseline, so no runtime detection is needed. Rejected: AVX2 (the array is 16 bytes, a wider
//! register buys nothing) and a binary search (branchy, slower than either for 16 bytes).

/// Index of `byte` in `keys[..used]`, if present.
#[inline]
pub(crate) fn find_byte16(keys: &[u8; 16], used: usize, byte: u8) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        find_byte16_sse2(keys, used, byte)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        find_byte16_portable(keys, used, byte)
    }
}

/// The portable body: a scan of the used keys.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline]
pub(crate) fn find_byte16_portable(keys: &[u8; 16], used: usize, byte: u8) -> Option<usize> {
    keys[..used.min(16)].iter().position(|&k| k == byte)
}

/// The SSE2 body.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn find_byte16_sse2(keys: &[u8; 16], used: usize, byte: u8) -> Option<usize> {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: `keys` is 16 readable bytes; loadu has no alignment requirement; SSE2 is part of
    // the x86-64 baseline, so the target feature is always present.
    let lanes = unsafe { _mm_loadu_si128(keys.as_ptr().cast::<__m128i>()) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operations.
    let equal = unsafe { _mm_cmpeq_epi8(lanes, _mm_set1_epi8(byte as i8)) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operation.
    let bits = unsafe { _mm_movemask_epi8(equal) } as u32;
    let mask = bits & ((1u32 << used.min(16)) - 1);
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse2_matches_portable() {
        let mut keys = [0u8; 16];
        for (i, key) in keys.iter_mut().enumerate() {
            *key = (i as u8) * 13 + 2;
        }
        for used in 0..=16 {
            for byte in 0..=255u8 {
                let expected = find_byte16_portable(&keys, used, byte);
                assert_eq!(
                    find_byte16(&keys, used, byte),
                    expected,
                    "used {used} byte {byte}"
                );
                #[cfg(target_arch = "x86_64")]
                assert_eq!(find_byte16_sse2(&keys, used, byte), expected);
            }
        }
        // Unused lanes that happen to equal the byte must not match.
        let zeros = [0u8; 16];
        assert_eq!(find_byte16(&zeros, 0, 0), None);
        assert_eq!(find_byte16(&zeros, 3, 0), Some(0));
    }
}
