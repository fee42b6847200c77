//! What one read may take: the one type every way in (rrdcached's FETCH, the web chart's
//! `/api/fetch`, Graphite's `/render`, a graph's DEFs) counts its rows, points or values
//! against before anything is allocated or read.
//!
//! Each way in keeps its own limit (FETCH 10 million rows, `/api/fetch` 5 million, a
//! Graphite request 10 million points and 10 million rows a series, a graph 8 Mi values a
//! DEF) and answers [`Over`] in its own protocol's form; the counting is here, once: in
//! wide integers (a range near `i64`'s ends makes counts that overflow), a negative count
//! is none, and a refused spend takes nothing.
//!
//! Memory held at once across requests is a different matter: the daemon's gate (a share of
//! bytes each large reply takes while it is built) bounds that.

use crate::fetch::Plan;
use std::cell::Cell;

/// A count a read may still spend, of `limit` at the start.
#[derive(Debug)]
pub struct Budget {
    left: Cell<u64>,
    limit: u64,
}

/// A spend refused: `asked` more than the `left` of a budget of `limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Over {
    pub asked: u128,
    pub left: u64,
    pub limit: u64,
}

impl Budget {
    pub const fn new(limit: u64) -> Budget {
        Budget {
            left: Cell::new(limit),
            limit,
        }
    }

    /// What the budget was at the start.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// What is still to spend.
    pub fn left(&self) -> u64 {
        self.left.get()
    }

    /// Spend `n` (a negative count is none); refused, with nothing spent, past what is left.
    pub fn spend(&self, n: i128) -> Result<(), Over> {
        let asked = n.max(0) as u128;
        let left = self.left.get();
        match u64::try_from(asked) {
            Ok(k) if k <= left => {
                self.left.set(left - k);
                Ok(())
            }
            _ => Err(Over {
                asked,
                left,
                limit: self.limit,
            }),
        }
    }

    /// Spend the rows of `plan`, `per_row` values each (1 to count rows).
    pub fn plan(&self, plan: &Plan, per_row: usize) -> Result<(), Over> {
        self.spend(i128::from(plan.rows()) * per_row as i128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spend_past_what_is_left_takes_nothing() {
        let b = Budget::new(10);
        assert_eq!(b.spend(4), Ok(()));
        assert_eq!(b.left(), 6);
        assert_eq!(
            b.spend(7),
            Err(Over {
                asked: 7,
                left: 6,
                limit: 10
            })
        );
        assert_eq!(b.left(), 6);
        assert_eq!(b.spend(6), Ok(()));
        assert_eq!(b.left(), 0);
        assert_eq!(b.spend(0), Ok(()));
        assert!(b.spend(1).is_err());
    }

    #[test]
    fn negative_and_huge_counts_neither_wrap_nor_pass() {
        let b = Budget::new(u64::MAX);
        assert_eq!(b.spend(-5), Ok(()));
        assert_eq!(b.left(), u64::MAX);
        let huge = i128::from(u64::MAX) + 1;
        assert_eq!(b.spend(huge).unwrap_err().asked, huge as u128);
        assert_eq!(b.left(), u64::MAX);
    }

    #[test]
    fn a_plan_counts_its_rows_times_its_values() {
        let p = Plan {
            rra: 0,
            span: 300,
            start: 0,
            end: 3000,
        };
        let b = Budget::new(25);
        assert!(b.plan(&p, 3).is_err(), "10 rows of 3 values are 30");
        assert_eq!(b.plan(&p, 2), Ok(()));
        assert_eq!(b.left(), 5);
    }
}
