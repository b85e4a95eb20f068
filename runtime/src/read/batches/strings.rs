//! A string dimension cut like a number: its strings numbered by their
//! rank among the strings that bound the touched tiles' MBRs and the
//! query's ranges (the *bounds*, sorted and distinct). Key `2i` is bound
//! `i` itself; key `2i + 1` is every string strictly between bounds `i`
//! and `i + 1`. Keys in order are then strings in byte order (the order
//! of a string dimension in row-major, column-major and global order
//! alike), an interval of keys is an interval of strings, and an even key
//! is a single value — under which the next dimension can be opened.
//!
//! The numbering is exact whatever the strings share: strings alike in
//! their first bytes are told apart by the bounds between them (each tile
//! brings two), so an odd key holds only the cells of the tiles whose MBR
//! spans the gap between two neighbouring bounds — a few tiles, not a run
//! of the dimension.
//!
//! A string range is inclusive at both ends, so a part ending at an odd
//! key ends at the largest string below the next bound no longer than any
//! stored one: no stored string is longer than the largest var-sized tile
//! of the dimension.

/// The keys of one string dimension (see the module's description).
#[derive(Debug, Clone)]
pub(crate) struct StringUnits {
    /// No stored string of the dimension is longer than this many bytes.
    longest: usize,
    /// The bounds, ascending and distinct.
    bounds: Vec<Vec<u8>>,
}

impl StringUnits {
    /// The keys of a dimension whose strings are at most `longest` bytes,
    /// numbered by the `bounds` (any order, repeats allowed).
    pub(crate) fn new(longest: u64, bounds: Vec<Vec<u8>>) -> StringUnits {
        let mut bounds = bounds;
        bounds.sort_unstable();
        bounds.dedup();
        StringUnits {
            longest: usize::try_from(longest).unwrap_or(usize::MAX),
            bounds,
        }
    }

    /// The key of string `s`: `2i` when it is bound `i`, `2i + 1` when it
    /// lies between bounds `i` and `i + 1` (-1 below the first).
    pub(crate) fn key(&self, s: &[u8]) -> i128 {
        match self.bounds.binary_search_by(|b| b.as_slice().cmp(s)) {
            Ok(i) => 2 * i as i128,
            Err(i) => 2 * i as i128 - 1,
        }
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

    /// The inclusive string bounds of keys `a..=b`; `None` when they hold
    /// no string.
    pub(crate) fn bounds(&self, a: i128, b: i128) -> Option<(Vec<u8>, Vec<u8>)> {
        let bound = |k: i128| usize::try_from(k).ok().and_then(|i| self.bounds.get(i));
        let lo = if a < 0 {
            Vec::new()
        } else if a % 2 == 0 {
            bound(a / 2)?.clone()
        } else {
            // The smallest string after the bound.
            let mut s = bound(a / 2)?.clone();
            s.push(0);
            s
        };
        let hi = if b % 2 == 0 {
            bound(b / 2)?.clone()
        } else {
            // The largest string before the next bound (none after the
            // last: no stored string is there).
            below(bound((b + 1) / 2)?, self.longest)?
        };
        (lo <= hi).then_some((lo, hi))
    }
}

/// The largest string before `s` among those of at most `longest` bytes
/// (or of `s`'s length, when longer); `None` before the empty string.
fn below(s: &[u8], longest: usize) -> Option<Vec<u8>> {
    let (&last, head) = s.split_last()?;
    let mut out = head.to_vec();
    if last > 0 {
        // A string before `s` either stops within `head` or has a smaller
        // byte at `s`'s last place, then anything (at most 0xff each).
        out.push(last - 1);
        out.resize(longest.max(s.len()), 0xff);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_strings_in_order_however_long_their_shared_start() {
        let long = |tail: &str| format!("abcdefghijklmnopqrstuvwxyz{tail}").into_bytes();
        let units = StringUnits::new(
            30,
            vec![
                b"a".to_vec(),
                long("1"),
                long("3"),
                b"b\0".to_vec(),
                long("1"),
            ],
        );
        let words: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"a\0".to_vec(),
            long(""),
            long("1"),
            long("2"),
            long("3"),
            b"b".to_vec(),
            b"b\0".to_vec(),
            b"\xff".to_vec(),
        ];
        let keys: Vec<i128> = words.iter().map(|w| units.key(w)).collect();
        assert_eq!(keys, [-1, 0, 1, 1, 2, 3, 4, 5, 6, 7]);
        // An even key is one string; an odd one the strings between two
        // bounds, each inside the bounds of its key (none after the last
        // bound, where no stored string lies).
        assert_eq!(units.bounds(2, 2), Some((long("1"), long("1"))));
        assert_eq!(units.bounds(7, 7), None);
        for (w, &k) in words.iter().zip(&keys).take(9) {
            let (lo, hi) = units.bounds(k, k).unwrap_or_else(|| panic!("{w:?}"));
            assert!(lo <= *w && *w <= hi, "{w:?} outside {lo:?}..={hi:?}");
        }
        let (lo, hi) = units.bounds(3, 3).unwrap();
        assert!(long("1") < lo && hi < long("3"));
        // Nothing lies between "b" and "b\0": the largest before "b\0" is
        // "b" itself, after the bound "abc…3".
        assert_eq!(units.bounds(5, 5).unwrap().1, b"b");
        assert_eq!(units.bounds(0, 4), Some((b"a".to_vec(), long("3"))));
        assert_eq!(below(b"", 4), None);
        assert_eq!(below(b"b", 3).unwrap(), b"a\xff\xff");
        assert_eq!(units.midpoint(2, 6), 4);
        assert_eq!(units.midpoint(2, 8), 4);
    }
}
