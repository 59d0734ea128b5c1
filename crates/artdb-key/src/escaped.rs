//! Escaped, terminated encoding of byte strings and strings, the variable-width field of a key.
//!
//! Byte format: every `0x00` of the input is written as `0x00 0xFF`, every other byte as itself,
//! and the field ends with the terminator `0x00 0x00`. A string is encoded as its UTF-8 bytes.
//!
//! Why this keeps order inside a tuple: a field's encoding is never a prefix of another field's
//! encoding (the terminator can only appear at the end), so when two tuples differ in this field
//! the first differing byte lies inside the field and decides. If `a` is a proper prefix of `b`,
//! `a`'s terminator `0x00 0x00` meets either a byte `>= 0x01` of `b` or `b`'s escaped zero
//! `0x00 0xFF`, both greater, so `a < b` as bytes too. If they first differ at a byte, a zero in
//! one of them becomes `0x00 ..` and still sorts below any non-zero byte. The road not taken:
//! a length prefix would be shorter for long strings but sorts `"b" < "aa"`, breaking order.
//!
//! Invariant of [`decode`]: it accepts exactly the outputs of [`encode_into`] followed by any
//! bytes, and otherwise returns a typed [`Error`] (never panics).

use std::borrow::Cow;

use crate::Error;

/// The byte that follows `0x00` to mark an escaped zero.
pub(crate) const ESCAPED_ZERO: u8 = 0xFF;
/// The byte that follows `0x00` to mark the end of the field.
pub(crate) const TERMINATOR: u8 = 0x00;

/// Appends the escaped, terminated encoding of `bytes` to `out`.
pub fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 2);
    let mut rest = bytes;
    while let Some(zero) = rest.iter().position(|&byte| byte == 0) {
        out.extend_from_slice(&rest[..zero]);
        out.extend_from_slice(&[0x00, ESCAPED_ZERO]);
        rest = &rest[zero + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0x00, TERMINATOR]);
}

/// Decodes one escaped field that starts at `input[start..]`. Returns the unescaped bytes
/// (borrowed from `input` when the field holds no escaped zero, the common case) and the offset
/// just past the terminator.
pub fn decode(input: &[u8], start: usize) -> Result<(Cow<'_, [u8]>, usize), Error> {
    let rest = input.get(start..).unwrap_or(&[]);
    let Some(zero) = rest.iter().position(|&byte| byte == 0) else {
        return Err(Error::Unterminated { at: start });
    };
    if rest.get(zero + 1) == Some(&TERMINATOR) {
        return Ok((Cow::Borrowed(&rest[..zero]), start + zero + 2));
    }
    let mut out = Vec::with_capacity(zero + 1);
    let end = decode_into(input, start, &mut out)?;
    Ok((Cow::Owned(out), end))
}

/// Decodes one escaped field that starts at `input[start..]`, appending the unescaped bytes to
/// `out`. Returns the offset just past the terminator.
pub(crate) fn decode_into(input: &[u8], start: usize, out: &mut Vec<u8>) -> Result<usize, Error> {
    let mut at = start;
    loop {
        let rest = input.get(at..).unwrap_or(&[]);
        let Some(zero) = rest.iter().position(|&byte| byte == 0) else {
            return Err(Error::Unterminated { at: start });
        };
        out.extend_from_slice(&rest[..zero]);
        let marker_at = at + zero + 1;
        match input.get(marker_at) {
            Some(&TERMINATOR) => return Ok(marker_at + 1),
            Some(&ESCAPED_ZERO) => out.push(0),
            Some(&byte) => {
                return Err(Error::InvalidEscape {
                    at: marker_at,
                    byte,
                })
            }
            None => return Err(Error::Unterminated { at: start }),
        }
        at = marker_at + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_into(bytes, &mut out);
        out
    }

    #[test]
    fn zeros_are_escaped_and_the_field_is_terminated() {
        assert_eq!(encoded(b""), [0, 0]);
        assert_eq!(encoded(&[0]), [0, 0xFF, 0, 0]);
        assert_eq!(encoded(&[1, 0, 0, 2]), [1, 0, 0xFF, 0, 0xFF, 2, 0, 0]);
    }

    #[test]
    fn bad_fields_are_typed_errors() {
        assert_eq!(decode(&[1, 2], 0), Err(Error::Unterminated { at: 0 }));
        assert_eq!(decode(&[1, 0], 0), Err(Error::Unterminated { at: 0 }));
        assert_eq!(decode(&[], 0), Err(Error::Unterminated { at: 0 }));
        assert_eq!(
            decode(&[9, 1, 0, 7, 0, 0], 1),
            Err(Error::InvalidEscape { at: 3, byte: 7 })
        );
        assert_eq!(
            decode(&[9, 1, 0, 0xFF, 0, 7], 1),
            Err(Error::InvalidEscape { at: 5, byte: 7 })
        );
        let (field, end) = decode(&[9, 1, 0, 0xFF, 0, 0, 5], 1).unwrap();
        assert_eq!((&*field, end), (&[1u8, 0][..], 6));
        assert!(matches!(field, Cow::Owned(_)));
        let (field, end) = decode(&[9, 1, 2, 0, 0, 5], 1).unwrap();
        assert_eq!((&*field, end), (&[1u8, 2][..], 5));
        assert!(matches!(field, Cow::Borrowed(_)));
    }
}
