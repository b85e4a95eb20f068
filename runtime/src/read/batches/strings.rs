//! A string dimension cut like a number: each string has a key, in byte
//! order, from its first `PREFIX` bytes. Key `2p` is the one string those
//! bytes make without their trailing zero bytes (the smallest string of
//! that prefix); key `2p + 1` is every other string of the prefix (longer
//! ones, or ones ending in zero bytes). Keys in order are then strings in
//! byte order (the order of a string dimension in row-major, column-major
//! and global order alike), an interval of keys is an interval of
//! strings, and an even key is a single value — under which the next
//! dimension can be opened. An odd key may hold many values: strings that
//! share their first `PREFIX` bytes are not cut further.
//!
//! A string range is inclusive at both ends, so a part ending at an odd
//! key ends at the largest string of its prefix no longer than any stored
//! one: no stored string is longer than the largest var-sized tile of the
//! dimension.

/// The bytes of a string a key keeps (120 bits: twice as many keys, and
/// one more, still fit an `i128`).
const PREFIX: usize = 15;

/// The keys of one string dimension (see the module's description).
#[derive(Debug, Clone)]
pub(crate) struct StringUnits {
    /// No stored string of the dimension is longer than this many bytes.
    longest: usize,
    /// The query's range on the dimension, if it gives one.
    range: Option<(Vec<u8>, Vec<u8>)>,
}

/// The first `PREFIX` bytes of `s` (zeros after its end) as a number.
fn prefix(s: &[u8]) -> i128 {
    let mut bytes = [0u8; 16];
    let n = s.len().min(PREFIX);
    bytes[1..=n].copy_from_slice(&s[..n]);
    i128::from_be_bytes(bytes)
}

/// The `PREFIX` bytes of prefix number `p`.
fn prefix_bytes(p: i128) -> Vec<u8> {
    p.to_be_bytes()[1..].to_vec()
}

/// The smallest string of prefix `p`: its bytes without trailing zeros.
fn smallest(p: i128) -> Vec<u8> {
    let mut bytes = prefix_bytes(p);
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes
}

/// The key of string `s`.
pub(crate) fn key(s: &[u8]) -> i128 {
    let p = prefix(s);
    2 * p + i128::from(smallest(p) != s)
}

impl StringUnits {
    /// The keys of a dimension whose strings are at most `longest` bytes,
    /// read within the query's `range`.
    pub(crate) fn new(longest: u64, range: Option<(Vec<u8>, Vec<u8>)>) -> StringUnits {
        StringUnits {
            longest: usize::try_from(longest).unwrap_or(usize::MAX),
            range,
        }
    }

    /// The keys the query's range covers within the keys `lo..=hi` of the
    /// tiles' MBRs; `None` when no cell can be in it.
    pub(crate) fn key_span(&self, (lo, hi): (i128, i128)) -> Option<(i128, i128)> {
        let (lo, hi) = match &self.range {
            Some((qa, qb)) => (lo.max(key(qa)), hi.min(key(qb))),
            None => (lo, hi),
        };
        (lo <= hi).then_some((lo, hi))
    }

    /// Where to cut keys `a..=b` (`a < b`): near the middle, at an even
    /// key where there is one (a part then ends at a string of its own,
    /// not at a long bound).
    pub(crate) fn midpoint(&self, a: i128, b: i128) -> i128 {
        let mid = a + (b - a) / 2;
        if mid % 2 != 0 && mid > a {
            mid - 1
        } else {
            mid
        }
    }

    /// The inclusive string bounds of keys `a..=b`, within the query's
    /// range; `None` when they hold no string.
    pub(crate) fn bounds(&self, a: i128, b: i128) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut lo = smallest(a.div_euclid(2));
        if a % 2 != 0 {
            // The strings of the prefix after its smallest.
            lo.push(0);
        }
        let mut hi = if b % 2 == 0 {
            smallest(b / 2)
        } else {
            let mut s = prefix_bytes(b.div_euclid(2));
            s.resize(PREFIX + self.longest.max(1), 0xff);
            s
        };
        if let Some((qa, qb)) = &self.range {
            lo = lo.max(qa.clone());
            hi = hi.min(qb.clone());
        }
        (lo <= hi).then_some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_strings_in_order() {
        let words: [&[u8]; 9] = [
            b"",
            b"a",
            b"a\0",
            b"ab",
            b"abcdefghijklmno",
            b"abcdefghijklmnop",
            b"abcdefghijklmnoq",
            b"b",
            b"\xff",
        ];
        let keys: Vec<i128> = words.iter().map(|w| key(w)).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
        // One value per even key; the long strings share an odd one.
        assert_eq!(keys[1] % 2, 0);
        assert_eq!(keys[2], keys[1] + 1);
        assert_eq!(keys[5], keys[6]);
        let units = StringUnits::new(20, None);
        assert_eq!(
            units.bounds(keys[1], keys[1]),
            Some((b"a".to_vec(), b"a".to_vec()))
        );
        let (lo, hi) = units.bounds(keys[5], keys[5]).unwrap();
        assert!(lo.as_slice() <= words[5] && words[6] <= hi.as_slice());
        assert!(hi.as_slice() < words[7]);
        assert_eq!(units.bounds(keys[2], keys[2]).unwrap().0, b"a\0");
        let ranged = StringUnits::new(20, Some((b"ab".to_vec(), b"b".to_vec())));
        assert_eq!(
            ranged.key_span((keys[0], keys[8])),
            Some((keys[3], keys[7]))
        );
        assert_eq!(
            ranged.bounds(keys[1], keys[3]),
            Some((b"ab".to_vec(), b"ab".to_vec()))
        );
        assert_eq!(ranged.bounds(keys[1], keys[2]), None);
        assert_eq!(units.midpoint(2, 6), 4);
        assert_eq!(units.midpoint(2, 8), 4);
    }
}
