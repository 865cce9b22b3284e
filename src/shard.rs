//! Shards: one exhaustive check split over `count` machines, deterministically.
//!
//! The split depth D depends on `count` only. Every shard explores the tree above depth D
//! (branch points with two or more alternatives are counted). At the D-th such point, an
//! alternative belongs to the shard `hash(choices at the first D points) % count`, and each
//! shard explores only the subtrees it owns; a run that ends above depth D belongs to the shard
//! `hash(all its choices) % count`. So every leaf of the tree has exactly one owner, and the
//! union of the shards' owned leaves is the unsharded set of leaves. A shard's other runs pass
//! through the shared top of the tree and are counted as runs, not as its leaves.
//!
//! With partial-order reduction, every option above and at depth D is explored (races found in
//! one shard's subtrees cannot ask another shard to backtrack), and reduction works below it;
//! the union then covers every trace, as the unsharded search does, with some repeats.
//!
//! `merge_verdicts` combines the shards' verdicts into the check's.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::verdict::{IncompleteReason, Verdict};

/// Upper bound on `shard.count`.
pub const SHARDS_MAX: u32 = 4_096;

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
pub const PREFIX_HASH_START: u64 = 0xcbf2_9ce4_8422_2325;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Enough branch points that the prefixes outnumber the shards many times over even when
    /// every point is binary: 2^D >= 16 * count. Subtrees differ in size by orders of magnitude,
    /// so the more of them each shard owns, the closer the shards come to equal parts; with
    /// 2^D >= 4 * count one shard of two carried 70 to 80% of a tree. The price is the shared
    /// top, which every shard explores without partial-order reduction.
    pub fn split_depth(self) -> usize {
        let bits = u32::BITS - self.count.saturating_sub(1).leading_zeros();
        bits as usize + 4
    }

    pub fn owns(self, prefix_hash: u64) -> bool {
        // Mixing spreads FNV's low bits, which are weak for short inputs.
        (mix(prefix_hash) % u64::from(self.count)) as u32 == self.index
    }

    pub fn validate(self) -> Result<()> {
        if self.count == 0 || self.count > SHARDS_MAX {
            return Err(Error::new(format!(
                "shard.count is {} but must be between 1 and {SHARDS_MAX}",
                self.count
            )));
        }
        if self.index >= self.count {
            return Err(Error::new(format!(
                "shard.index is {} but must be below shard.count ({})",
                self.index, self.count
            )));
        }
        Ok(())
    }
}

/// The prefix hash after one more choice.
pub fn extend(hash: u64, chosen: usize) -> u64 {
    let mut hash = hash;
    for byte in (chosen as u32).to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn mix(value: u64) -> u64 {
    let mut z = value;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Combines the verdicts of a sharded check: VIOLATED if any shard's is (the lowest shard
/// index's, so that the answer does not depend on the order the verdicts arrive in); else
/// BOUNDED when every shard of the split is present once and BOUNDED; else INCOMPLETE.
pub fn merge_verdicts(verdicts: &[Verdict]) -> Result<Verdict> {
    if verdicts.is_empty() {
        return Err(Error::new("mergeVerdicts needs at least one verdict"));
    }
    let mut count: Option<u32> = None;
    let mut seen: Vec<u32> = Vec::with_capacity(verdicts.len());
    for verdict in verdicts {
        let shard = match verdict {
            Verdict::Held { .. } => {
                return Err(Error::new(
                    "mergeVerdicts: a replay's verdict is not a shard's",
                ))
            }
            Verdict::Bounded { shard, .. }
            | Verdict::Incomplete { shard, .. }
            | Verdict::Violated { shard, .. } => shard,
        };
        let Some(shard) = shard else {
            return Err(Error::new(
                "mergeVerdicts: every verdict must come from a sharded check (it names its shard)",
            ));
        };
        if count.is_some_and(|c| c != shard.count) {
            return Err(Error::new(format!(
                "mergeVerdicts: the verdicts split the check differently ({} and {} shards)",
                count.unwrap_or(0),
                shard.count
            )));
        }
        count = Some(shard.count);
        if seen.contains(&shard.index) {
            return Err(Error::new(format!(
                "mergeVerdicts: shard {} appears twice",
                shard.index
            )));
        }
        seen.push(shard.index);
    }
    let index_of = |v: &Verdict| match v {
        Verdict::Bounded { shard, .. }
        | Verdict::Incomplete { shard, .. }
        | Verdict::Violated { shard, .. } => shard.map_or(0, |s| s.index),
        Verdict::Held { .. } => 0,
    };
    if let Some(violated) = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Violated { .. }))
        .min_by_key(|v| index_of(v))
    {
        return Ok(violated.clone());
    }
    let runs: u64 = verdicts.iter().map(Verdict::runs).sum();
    let all_present = count.is_some_and(|c| seen.len() == c as usize);
    let all_bounded = verdicts
        .iter()
        .all(|v| matches!(v, Verdict::Bounded { .. }));
    if all_present && all_bounded {
        return Ok(Verdict::Bounded {
            runs,
            strategy: verdicts[0].strategy(),
            shard: None,
        });
    }
    let mut sorted: Vec<&Verdict> = verdicts.iter().collect();
    sorted.sort_by_key(|v| index_of(v));
    let first_incomplete = sorted.iter().find_map(|v| match v {
        Verdict::Incomplete {
            reason, strategy, ..
        } => Some((*reason, *strategy)),
        _ => None,
    });
    let (reason, strategy) = match first_incomplete {
        Some(found) if all_present => found,
        Some((_, strategy)) => (IncompleteReason::Shards, strategy),
        None => (IncompleteReason::Shards, verdicts[0].strategy()),
    };
    let distinct_schedules = verdicts
        .iter()
        .map(|v| match v {
            Verdict::Incomplete {
                distinct_schedules, ..
            } => *distinct_schedules,
            other => other.runs(),
        })
        .sum();
    Ok(Verdict::Incomplete {
        runs,
        reason,
        strategy,
        distinct_schedules,
        shard: None,
        switched_after_runs: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::StrategyName;

    fn shard(index: u32, count: u32) -> Option<Shard> {
        Some(Shard { index, count })
    }

    fn bounded(index: u32, count: u32, runs: u64) -> Verdict {
        Verdict::Bounded {
            runs,
            strategy: StrategyName::Exhaustive,
            shard: shard(index, count),
        }
    }

    fn incomplete(index: u32, count: u32, runs: u64) -> Verdict {
        Verdict::Incomplete {
            runs,
            reason: IncompleteReason::Budget,
            strategy: StrategyName::Exhaustive,
            distinct_schedules: runs,
            shard: shard(index, count),
            switched_after_runs: None,
        }
    }

    fn violated(index: u32, count: u32, invariant: &str) -> Verdict {
        Verdict::Violated {
            runs: 1,
            shrink_runs: 0,
            invariant: invariant.into(),
            message: "m".into(),
            run_seed: "s".into(),
            events_kept: vec![],
            faults: vec![],
            trace: vec![],
            strategy: Some(StrategyName::Exhaustive),
            shard: shard(index, count),
            switched_after_runs: None,
        }
    }

    #[test]
    fn merges_shard_verdicts() {
        let all_bounded = [bounded(1, 2, 5), bounded(0, 2, 7)];
        assert_eq!(
            merge_verdicts(&all_bounded).unwrap(),
            Verdict::Bounded {
                runs: 12,
                strategy: StrategyName::Exhaustive,
                shard: None
            }
        );
        // The lowest shard's violation wins, whatever the order.
        let mixed = [violated(2, 3, "b"), bounded(1, 3, 4), violated(0, 3, "a")];
        let Verdict::Violated { invariant, .. } = merge_verdicts(&mixed).unwrap() else {
            panic!("violated");
        };
        assert_eq!(invariant, "a");
        // A missing shard is never BOUNDED.
        let missing = merge_verdicts(&[bounded(0, 2, 5)]).unwrap();
        assert!(matches!(
            missing,
            Verdict::Incomplete {
                runs: 5,
                reason: IncompleteReason::Shards,
                ..
            }
        ));
        let partial = merge_verdicts(&[bounded(0, 2, 5), incomplete(1, 2, 3)]).unwrap();
        assert!(matches!(
            partial,
            Verdict::Incomplete {
                runs: 8,
                reason: IncompleteReason::Budget,
                distinct_schedules: 8,
                ..
            }
        ));
        assert!(merge_verdicts(&[bounded(0, 2, 1), bounded(0, 2, 1)]).is_err());
        assert!(merge_verdicts(&[bounded(0, 2, 1), bounded(1, 3, 1)]).is_err());
        assert!(merge_verdicts(&[]).is_err());
    }

    #[test]
    fn split_depth_grows_with_the_count() {
        assert_eq!(Shard { index: 0, count: 1 }.split_depth(), 4);
        assert_eq!(Shard { index: 0, count: 2 }.split_depth(), 5);
        assert_eq!(Shard { index: 0, count: 4 }.split_depth(), 6);
        assert_eq!(Shard { index: 0, count: 5 }.split_depth(), 7);
        assert!(Shard { index: 2, count: 2 }.validate().is_err());
    }
}
