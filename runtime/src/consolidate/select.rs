//! Which fragments one step of fragment consolidation merges: TileDB's
//! choice (`FragmentConsolidator::compute_next_to_consolidate` and
//! `are_consolidatable`, tiledb/sm/consolidator/fragment_consolidator.cc),
//! reproduced rule by rule.
//!
//! Candidates are the fragments in time order. A run is a stretch of
//! adjacent candidates, between `step_min_frags` and `step_max_frags` long
//! (both capped at the candidate count, so TileDB's defaults consider only
//! the run of every candidate). A run is admissible when the run one
//! shorter with the same start is, when its last two fragments have a size
//! ratio (smaller / larger) of at least `step_size_ratio` and, for dense
//! arrays, when the union of the run's non-empty domains overlaps neither
//! a candidate before the run nor the fragments older than the
//! consolidation's time range, and `cells(union) / Σ cells(non-empty domain
//! expanded to whole tiles)` is at most `amplification`. Every prefix of an
//! admissible run is thus admissible too: a dense run whose first pair
//! amplifies too much is refused even when the whole run would not. The
//! longest admissible length wins; among runs of that length the first is
//! kept unless a later one is more than 25% smaller (compared with the one
//! kept so far).

use super::ConsolidationConfig;

/// An integer range per dimension, inclusive (dense arrays only).
pub type IntRect = Vec<(i128, i128)>;

/// One candidate fragment, as the choice sees it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The fragment's size: its data files as its footer records them plus
    /// its metadata file.
    pub size: u64,
    /// Dense arrays: the non-empty domain (`None` for sparse arrays).
    pub domain: Option<IntRect>,
    /// Dense arrays: the non-empty domain expanded to whole space tiles.
    pub expanded: Option<IntRect>,
}

/// Sentinel of an inadmissible run (TileDB marks them with the largest
/// size, and its choice compares against that value).
const INVALID: u64 = u64::MAX;

fn overlap(a: &IntRect, b: &IntRect) -> bool {
    a.iter()
        .zip(b)
        .all(|((alo, ahi), (blo, bhi))| alo <= bhi && blo <= ahi)
}

fn expand(into: &mut IntRect, by: &IntRect) {
    for ((lo, hi), (blo, bhi)) in into.iter_mut().zip(by) {
        *lo = (*lo).min(*blo);
        *hi = (*hi).max(*bhi);
    }
}

/// Cells in a rectangle, saturating at `u64::MAX` as TileDB's count does.
fn cell_num(r: &IntRect) -> u64 {
    let mut cells: u64 = 1;
    for (lo, hi) in r {
        let width = u64::try_from(hi - lo + 1).unwrap_or(u64::MAX);
        if width == u64::MAX {
            return u64::MAX;
        }
        cells = cells.saturating_mul(width);
        if cells == u64::MAX {
            return cells;
        }
    }
    cells
}

/// The dense-only condition on the run `start..=end` with union `union`.
fn dense_run_allowed(
    amplification: f32,
    candidates: &[Candidate],
    anterior: Option<&IntRect>,
    start: usize,
    end: usize,
    union: &IntRect,
) -> bool {
    if anterior.is_some_and(|a| overlap(union, a)) {
        return false;
    }
    if candidates
        .iter()
        .take(start)
        .filter_map(|c| c.domain.as_ref())
        .any(|d| overlap(union, d))
    {
        return false;
    }
    let sum = candidates
        .get(start..=end)
        .unwrap_or_default()
        .iter()
        .filter_map(|c| c.expanded.as_ref())
        .fold(0u64, |acc, e| acc.saturating_add(cell_num(e)));
    (cell_num(union) as f64 / sum as f64) <= f64::from(amplification)
}

/// The run TileDB merges next: the candidates' index range and, for dense
/// arrays, the union of their non-empty domains. `None` when no run of at
/// least `step_min_frags` fragments is admissible.
pub fn next_run(
    config: &ConsolidationConfig,
    dense: bool,
    candidates: &[Candidate],
    anterior: Option<&IntRect>,
) -> Option<(std::ops::RangeInclusive<usize>, Option<IntRect>)> {
    let count = candidates.len();
    let min = (config.step_min_frags as usize).min(count);
    let max = (config.step_max_frags as usize).min(count);
    if max == 0 {
        return None;
    }
    // Row `i` of TileDB's table: per start `j`, the total size of
    // candidates `j..=j+i` (or INVALID) and, for dense arrays, the union of
    // their domains. Each row derives from the one before, so only that one
    // is kept, with every row's pick.
    let mut sizes: Vec<u64> = candidates.iter().map(|c| c.size).collect();
    let mut unions: Vec<Option<IntRect>> = candidates.iter().map(|c| c.domain.clone()).collect();
    let mut picks: Vec<Option<(usize, Option<IntRect>)>> = Vec::with_capacity(max);
    picks.push(pick(&sizes).map(|j| (j, unions.get(j).cloned().flatten())));
    for i in 1..max {
        let mut next_sizes = vec![INVALID; count];
        let mut next_unions: Vec<Option<IntRect>> = vec![None; count];
        for j in 0..count.saturating_sub(i) {
            let (previous, next) = (candidates[i + j - 1].size, candidates[i + j].size);
            let mut ratio = previous as f32 / next as f32;
            if ratio > 1.0 {
                ratio = 1.0 / ratio;
            }
            // A NaN ratio (two empty sizes) fails, as TileDB's `>=` does.
            let ratio_ok = ratio >= config.step_size_ratio;
            if !ratio_ok || sizes[j] == INVALID {
                continue;
            }
            let mut union = unions[j].take();
            match (&mut union, &candidates[i + j].domain) {
                (Some(u), Some(d)) => expand(u, d),
                (None, Some(d)) => union = Some(d.clone()),
                _ => {}
            }
            if dense {
                let allowed = union.as_ref().is_some_and(|u| {
                    dense_run_allowed(config.amplification, candidates, anterior, j, j + i, u)
                });
                if !allowed {
                    continue;
                }
            }
            next_sizes[j] = sizes[j].saturating_add(next);
            next_unions[j] = union;
        }
        sizes = next_sizes;
        unions = next_unions;
        picks.push(pick(&sizes).map(|j| (j, unions.get(j).cloned().flatten())));
    }
    // The longest admissible run of at least `min` candidates.
    let lowest_row = min.saturating_sub(1);
    for (i, chosen) in picks.into_iter().enumerate().skip(lowest_row).rev() {
        if let Some((j, union)) = chosen {
            return Some((j..=j + i, union));
        }
    }
    None
}

/// The run TileDB picks among those of one length: the first admissible
/// one, replaced by a later one only when that is more than 25% smaller
/// than the one kept (TileDB prefers earlier runs of similar size).
fn pick(sizes: &[u64]) -> Option<usize> {
    let mut best = INVALID;
    let mut best_col = 0;
    for (j, &size) in sizes.iter().enumerate() {
        if best == INVALID || (size as f64) < best as f64 / 1.25 {
            best = size;
            best_col = j;
        }
    }
    (best != INVALID).then_some(best_col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sparse(sizes: &[u64]) -> Vec<Candidate> {
        sizes
            .iter()
            .map(|&size| Candidate {
                size,
                domain: None,
                expanded: None,
            })
            .collect()
    }

    fn dense(rects: &[(i128, i128)], extent: i128) -> Vec<Candidate> {
        rects
            .iter()
            .map(|&(lo, hi)| Candidate {
                size: 100,
                domain: Some(vec![(lo, hi)]),
                expanded: Some(vec![(
                    lo.div_euclid(extent) * extent,
                    (hi.div_euclid(extent) + 1) * extent - 1,
                )]),
            })
            .collect()
    }

    #[test]
    fn default_takes_everything_or_nothing() {
        let config = ConsolidationConfig::default();
        let (run, _) = next_run(&config, false, &sparse(&[5, 500, 7]), None).unwrap();
        assert_eq!(run, 0..=2);
        // Dense fragments far apart: the union has more cells than the
        // fragments, so with the default amplification (1.0) and minimum
        // (all fragments) nothing is chosen.
        assert!(next_run(&config, true, &dense(&[(0, 3), (16, 19)], 4), None).is_none());
    }

    #[test]
    fn size_ratio_splits_runs_and_earlier_runs_win_ties() {
        let config = ConsolidationConfig {
            step_min_frags: 2,
            step_max_frags: 2,
            step_size_ratio: 0.5,
            ..Default::default()
        };
        // (10, 1000) and (1100, 10) fail the ratio; of the runs left,
        // (10, 12) is far smaller than (1000, 1100).
        let cands = sparse(&[10, 1000, 1100, 10, 12]);
        assert_eq!(next_run(&config, false, &cands, None).unwrap().0, 3..=4);
        // (10, 30) would be smaller but fails the ratio (1/3).
        let cands = sparse(&[1000, 1100, 10, 30]);
        assert_eq!(next_run(&config, false, &cands, None).unwrap().0, 0..=1);
        // No pair passes: nothing is chosen.
        assert!(next_run(&config, false, &sparse(&[10, 100, 10]), None).is_none());
        let config = ConsolidationConfig {
            step_min_frags: 2,
            step_max_frags: 2,
            ..Default::default()
        };
        // Sums 20, 21, 22: none is 25% below 20, the first run stays.
        assert_eq!(
            next_run(&config, false, &sparse(&[10, 10, 11, 11]), None)
                .unwrap()
                .0,
            0..=1
        );
        // Sums 100, 60 (more than 25% below), 55 (not 25% below 60).
        assert_eq!(
            next_run(&config, false, &sparse(&[50, 50, 10, 45]), None)
                .unwrap()
                .0,
            1..=2
        );
    }

    #[test]
    fn dense_union_must_not_cover_earlier_fragments() {
        let config = ConsolidationConfig {
            step_min_frags: 2,
            step_max_frags: 2,
            amplification: 10.0,
            ..Default::default()
        };
        // The union of the last two, [0, 7], covers the first's [4, 5]:
        // only the first two remain a run, although sizes tie.
        let cands = dense(&[(4, 5), (0, 3), (6, 7)], 2);
        assert_eq!(next_run(&config, true, &cands, None).unwrap().0, 0..=1);
        let cands = dense(&[(0, 1), (4, 5), (6, 7)], 2);
        assert_eq!(next_run(&config, true, &cands, None).unwrap().0, 0..=1);
        // The amplification: [0, 1] and [6, 7] span 8 cells for 4 written.
        let strict = ConsolidationConfig {
            amplification: 1.5,
            ..config.clone()
        };
        let cands = dense(&[(0, 1), (6, 7), (8, 9)], 2);
        assert_eq!(next_run(&strict, true, &cands, None).unwrap().0, 1..=2);
        let anterior = vec![(0, 0)];
        let cands = dense(&[(0, 3), (4, 7)], 4);
        assert!(next_run(&config, true, &cands, Some(&anterior)).is_none());
    }
}
