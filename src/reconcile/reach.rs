//! How a run reaches the ledger's rows: which tables it reads whole and which
//! it probes row by row, decided from sizes the shell counts (no statistics
//! needed), so that a run's reads stay proportional to the listing whatever
//! the ledger's age. Pure: the shell counts, these rules decide.

/// How the durably deleted Daytona cleanups are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletedReach {
    /// Few: the first release pass is one statement driven by them.
    Few,
    /// Read whole, once, at the first pass.
    Whole,
    /// A long history: only those of the sandboxes the run looks at, probed.
    Probed,
}

/// Where reading a table whole costs about what probing it would (a probe
/// costs two to three scanned rows; probing the leases also reads the open
/// ones), from the tables' estimated rows and the listing's size (counted as
/// at least 1,000: a small listing does not make a small ledger worth
/// probing). Returns whether the lease table is read whole (up to 3x the
/// listing) and how deleted cleanups are read: few while fewer than a quarter
/// of the listing, whole up to 2x, probed beyond.
pub fn capacity_reach(listed: usize, leases: i64, deleted: i64) -> (bool, DeletedReach) {
    let listed = listed.max(1000) as i64;
    let deleted = if deleted <= listed / 4 {
        DeletedReach::Few
    } else if deleted <= 2 * listed {
        DeletedReach::Whole
    } else {
        DeletedReach::Probed
    };
    (leases <= 3 * listed, deleted)
}

/// Up to this many owned items, recovery runs as one statement in the
/// application's shape (its cleanup rows come out in the application's
/// order, which the parity harness compares by id; its CTE joins are
/// quadratic in the items, bounded by this cap); more in four statements,
/// linear.
pub const RECOVER_IN_ONE_STATEMENT: usize = 64;

/// The absent candidates among `lone` lone live operation keys: few (the
/// usual case) are probed by primary key; many (an inventory that lists
/// little) may be found by one pass over the table, if the table (history
/// included) is not much larger than they are. `None`: probe; `Some(cap)`:
/// scan if the table holds at most `cap` operations (the shell counts up to
/// `cap + 1`).
pub fn absent_scan_cap(lone: usize, current: usize) -> Option<i64> {
    (lone * 16 > current).then_some(4 * lone as i64)
}

/// Whether a plan (EXPLAIN's text lines) applies its `= ANY` array only as an
/// index condition: no scan of the whole table, no row tested against it.
pub fn keyed_by_the_array(plan: &[String]) -> bool {
    let condition = |line: &String| line.trim_start().starts_with("Index Cond:") && line.contains("ANY");
    plan.iter().any(condition)
        && !plan.iter().any(|line| line.contains("Seq Scan") || (line.trim_start().starts_with("Filter:") && line.contains("ANY")))
}

/// A text column read as its values run together and their byte lengths
/// (`string_agg(x, '')`, `array_agg(octet_length(x))`): the values, NULL where
/// the length is; `None` when the lengths do not fit the string.
pub fn cut_by_lengths<'a>(joined: &'a str, lengths: impl IntoIterator<Item = Option<i32>>) -> Option<Vec<Option<&'a str>>> {
    let mut at = 0usize;
    lengths
        .into_iter()
        .map(|length| match length {
            None => Some(None),
            Some(length) => {
                let end = at.checked_add(usize::try_from(length).ok()?)?;
                let value = joined.get(at..end)?;
                at = end;
                Some(Some(value))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_cleanups_are_few_whole_or_probed_by_their_share_of_the_listing() {
        assert_eq!(capacity_reach(4000, 0, 1000), (true, DeletedReach::Few));
        assert_eq!(capacity_reach(4000, 0, 1001), (true, DeletedReach::Whole));
        assert_eq!(capacity_reach(4000, 0, 8000), (true, DeletedReach::Whole));
        assert_eq!(capacity_reach(4000, 0, 8001), (true, DeletedReach::Probed));
    }

    #[test]
    fn leases_are_read_whole_up_to_three_times_the_listing() {
        assert!(capacity_reach(4000, 12_000, 0).0);
        assert!(!capacity_reach(4000, 12_001, 0).0);
    }

    #[test]
    fn a_small_listing_counts_as_a_thousand() {
        assert_eq!(capacity_reach(0, 3000, 250), (true, DeletedReach::Few));
        assert_eq!(capacity_reach(10, 3001, 2001), (false, DeletedReach::Probed));
    }

    #[test]
    fn many_lone_keys_may_scan_a_table_at_most_four_times_their_number() {
        assert_eq!(absent_scan_cap(10, 160), None);
        assert_eq!(absent_scan_cap(11, 160), Some(44));
        assert_eq!(absent_scan_cap(0, 0), None);
    }


    fn plan(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn only_an_index_condition_on_the_array_is_keyed() {
        let keyed = plan(
            "Aggregate\n  InitPlan 1 (returns $0)\n    ->  Result\n  ->  Index Scan using sandbox_cleanup_jobs_v2_terminal_idx on sandbox_cleanup_jobs_v2 cleanup\n        Index Cond: ((sandbox_id)::text = ANY ($0))",
        );
        assert!(keyed_by_the_array(&keyed));
        // Never analyzed: another index walked by provider, every entry tested against the array.
        let walked = plan(
            "Aggregate\n  ->  Index Scan using sandbox_cleanup_jobs_v2_deleted_idx on sandbox_cleanup_jobs_v2 cleanup\n        Index Cond: (provider = 'daytona'::text)\n        Filter: ((deleted_at IS NOT NULL) AND ((sandbox_id)::text = ANY ($0)))",
        );
        assert!(!keyed_by_the_array(&walked));
        let scanned = plan("Aggregate\n  ->  Seq Scan on runtime_sandbox_capacity_leases lease\n        Filter: (sandbox_id = ANY ($0))");
        assert!(!keyed_by_the_array(&scanned));
        // Keyed, and the array also tested row by row: still refused.
        let both = plan("Index Scan using x\n  Index Cond: (sandbox_id = ANY ($0))\n  Filter: (other = ANY ($0))");
        assert!(!keyed_by_the_array(&both));
    }

    #[test]
    fn columns_are_cut_by_their_lengths() {
        let cut = |joined, lengths: &[Option<i32>]| cut_by_lengths(joined, lengths.iter().copied());
        assert_eq!(cut("abéc", &[Some(2), None, Some(0), Some(3)]), Some(vec![Some("ab"), None, Some(""), Some("éc")]));
        assert_eq!(cut("", &[]), Some(vec![]));
        // Lengths past the string, inside a character, or negative: not read.
        assert_eq!(cut("ab", &[Some(3)]), None);
        assert_eq!(cut("é", &[Some(1)]), None);
        assert_eq!(cut("ab", &[Some(-1)]), None);
    }
}
