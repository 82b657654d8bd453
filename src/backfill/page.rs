//! One keyset page, assembled from the attempts the shell fetches: which
//! attempts to fetch next, which resources make the page, where it ends, and
//! which resources win their identity. The same page serves every entry point:
//! applied (one page with its targets, or the orchestrator's pages), the
//! extension's preview of it, and the application's own dry-run preview, which
//! takes attempts without a run and reads one resource past the page.

use super::resources::{self, Resource};

/// An attempt's place in keyset order (`updated_at` in PostgreSQL's
/// microseconds since 2000; `run_id` compared by the server, in its collation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptKey {
    pub updated_at: i64,
    pub run_id: Vec<u8>,
    pub attempt: i32,
}

/// A page starts strictly after `attempt`'s resource `ordinal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    pub attempt: AttemptKey,
    pub ordinal: i32,
}

/// Where a fetch of attempts starts (in keyset order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchFrom {
    Start,
    /// The cursor's own attempt included (its resources after the ordinal only).
    AtOrAfter(AttemptKey),
    /// After the last attempt of a fetch that did not fill the page.
    After(AttemptKey),
}

/// A fetched attempt: its key, its run's org_id, whether it has a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub key: AttemptKey,
    pub org_id: Option<Vec<u8>>,
    pub has_run: bool,
}

/// What kind of page: the applied page (and its preview) takes only attempts
/// with a run and `limit` resources; the application's dry-run preview takes
/// every attempt and one resource more, to know whether more follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub limit: usize,
    pub with_runs_only: bool,
    pub look_ahead: bool,
}

impl Rules {
    pub fn applied(limit: usize) -> Rules {
        Rules { limit, with_runs_only: true, look_ahead: false }
    }

    pub fn application_preview(limit: usize) -> Rules {
        Rules { limit, with_runs_only: false, look_ahead: true }
    }

    fn wanted(self) -> usize {
        self.limit + usize::from(self.look_ahead)
    }
}

/// A page being assembled, fetch by fetch.
#[derive(Debug)]
pub struct Scan {
    rules: Rules,
    after: Option<After>,
    from: FetchFrom,
    attempts: Vec<Attempt>,
    resources: Vec<(usize, Resource)>,
    done: bool,
}

impl Scan {
    pub fn new(rules: Rules, after: Option<After>) -> Scan {
        let from = match &after {
            None => FetchFrom::Start,
            Some(after) => FetchFrom::AtOrAfter(after.attempt.clone()),
        };
        Scan { rules, after, from, attempts: Vec::new(), resources: Vec::with_capacity(rules.wanted()), done: false }
    }

    /// The next fetch (where from, how many attempts) given the sandbox
    /// resources per attempt seen last; `None` once the page is complete.
    pub fn next_fetch(&self, resources_per_attempt: f64) -> Option<(&FetchFrom, i64)> {
        (!self.done).then(|| {
            let wanted = self.rules.wanted() - self.resources.len();
            (&self.from, resources::attempts_to_fetch(wanted, resources_per_attempt))
        })
    }

    /// Whether the page still takes resources (the shell stops reading a fetch when not).
    pub fn is_full(&self) -> bool {
        self.resources.len() == self.rules.wanted()
    }

    /// Whether the page reads this attempt's resources (attempts without a
    /// run only mark where the next fetch starts on the applied page).
    pub fn reads(&self, attempt: &Attempt) -> bool {
        attempt.has_run || !self.rules.with_runs_only
    }

    /// What the page can still take of this attempt: its resources after
    /// this ordinal (the cursor's, inside the attempt the page starts in),
    /// at most this many. Reading only that window keeps a page's cost to
    /// the page inside an attempt of any size.
    pub fn window(&self, attempt: &AttemptKey) -> (i32, usize) {
        let after = match &self.after {
            Some(after) if after.attempt == *attempt => after.ordinal,
            _ => 0,
        };
        (after, self.rules.wanted() - self.resources.len())
    }

    /// The next fetched attempt, in keyset order, with its sandbox resources
    /// (empty when `reads` said no).
    pub fn push(&mut self, attempt: Attempt, found: Vec<Resource>) {
        let skip_through = match &self.after {
            Some(after) if after.attempt == attempt.key => after.ordinal,
            _ => 0,
        };
        let index = self.attempts.len();
        let wanted = self.rules.wanted();
        for resource in found {
            if resource.ordinal > skip_through && self.resources.len() < wanted {
                self.resources.push((index, resource));
            }
        }
        self.attempts.push(attempt);
    }

    /// A fetch of `fetch` attempts returned `rows`: the page is complete when
    /// full or when the attempts ran out; otherwise the next fetch starts
    /// after the last attempt.
    pub fn end_fetch(&mut self, rows: usize, fetch: i64) {
        if self.is_full() || (rows as u64) < fetch.max(0) as u64 {
            self.done = true;
        } else if let Some(last) = self.attempts.last() {
            self.from = FetchFrom::After(last.key.clone());
        } else {
            self.done = true;
        }
    }

    pub fn finish(self) -> Page {
        Page { rules: self.rules, attempts: self.attempts, resources: self.resources }
    }
}

/// An assembled page.
#[derive(Debug)]
pub struct Page {
    rules: Rules,
    attempts: Vec<Attempt>,
    /// In keyset order, each with its attempt's index; one more than the page
    /// when the look-ahead found one.
    resources: Vec<(usize, Resource)>,
}

/// One resource of the page with its attempt.
#[derive(Debug, Clone, Copy)]
pub struct Item<'p> {
    pub attempt: &'p Attempt,
    pub resource: &'p Resource,
}

impl Page {
    /// The page's resources, in keyset order.
    pub fn items(&self) -> impl ExactSizeIterator<Item = Item<'_>> + '_ {
        self.resources[..self.scanned()].iter().map(|(index, resource)| Item { attempt: &self.attempts[*index], resource })
    }

    pub fn item(&self, i: usize) -> Item<'_> {
        let (index, resource) = &self.resources[..self.scanned()][i];
        Item { attempt: &self.attempts[*index], resource }
    }

    /// How many resources the page has (the application's `scannedAttempts`).
    pub fn scanned(&self) -> usize {
        self.resources.len().min(self.rules.limit)
    }

    /// A full page says more may follow (the application's conservative rule);
    /// the look-ahead knows.
    pub fn has_more(&self) -> bool {
        if self.rules.look_ahead {
            self.resources.len() > self.rules.limit
        } else {
            self.resources.len() == self.rules.limit
        }
    }

    /// The last resource of the page: where the next page starts after.
    pub fn last(&self) -> Option<Item<'_>> {
        self.scanned().checked_sub(1).map(|i| self.item(i))
    }

    /// The page's resources that win their identity (the first of each in
    /// keyset order), as indices into `items`, in identity order.
    pub fn winners(&self) -> Vec<usize> {
        let resources: Vec<&Resource> = self.items().map(|item| item.resource).collect();
        resources::winners(&resources)
    }

    /// Sandbox resources per fetched attempt: sizes the next page's fetch.
    pub fn resources_per_attempt(&self) -> Option<f64> {
        (!self.attempts.is_empty()).then(|| self.resources.len() as f64 / self.attempts.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::resources::Provider;
    use super::*;

    fn key(t: i64, run: &str, attempt: i32) -> AttemptKey {
        AttemptKey { updated_at: t, run_id: run.as_bytes().to_vec(), attempt }
    }

    fn sandbox(ordinal: i32, id: &str) -> Resource {
        Resource {
            ordinal,
            provider: Provider::Daytona,
            sandbox_id: id.as_bytes().to_vec(),
            routing_domain: None,
            environment: b"production".to_vec(),
        }
    }

    /// Attempts (key, has_run, sandbox ids), fetched as the shell would, `fetch` at a time.
    fn assemble(rules: Rules, after: Option<After>, attempts: &[(AttemptKey, bool, Vec<&str>)]) -> (Page, Vec<FetchFrom>) {
        let mut scan = Scan::new(rules, after);
        let mut fetches = Vec::new();
        let mut next = 0usize;
        while let Some((from, fetch)) = scan.next_fetch(1.0) {
            fetches.push(from.clone());
            let start = match from {
                FetchFrom::Start => 0,
                FetchFrom::AtOrAfter(k) => attempts.iter().position(|a| a.0 == *k).unwrap(),
                FetchFrom::After(k) => attempts.iter().position(|a| a.0 == *k).unwrap() + 1,
            };
            assert!(start >= next.saturating_sub(1));
            let rows = &attempts[start..(start + fetch as usize).min(attempts.len())];
            for (k, has_run, ids) in rows {
                if scan.is_full() {
                    break;
                }
                let attempt = Attempt { key: k.clone(), org_id: None, has_run: *has_run };
                let found = if scan.reads(&attempt) {
                    ids.iter().enumerate().map(|(i, id)| sandbox(i as i32 + 1, id)).collect()
                } else {
                    Vec::new()
                };
                scan.push(attempt, found);
            }
            next = start + rows.len();
            scan.end_fetch(rows.len(), fetch);
        }
        (scan.finish(), fetches)
    }

    fn ids(page: &Page) -> Vec<String> {
        page.items().map(|i| String::from_utf8(i.resource.sandbox_id.clone()).unwrap()).collect()
    }

    #[test]
    fn a_page_starts_after_the_cursor_and_skips_attempts_without_a_run() {
        let attempts = vec![
            (key(1, "r1", 1), true, vec!["a", "b", "c"]),
            (key(1, "r2", 1), false, vec!["orphan"]),
            (key(2, "r1", 2), true, vec!["d"]),
            (key(3, "r3", 1), true, vec!["e", "f"]),
        ];
        let after = After { attempt: key(1, "r1", 1), ordinal: 2 };
        let (page, _) = assemble(Rules::applied(3), Some(after.clone()), &attempts);
        assert_eq!(ids(&page), ["c", "d", "e"]);
        assert!(page.has_more());
        let last = page.last().unwrap();
        assert_eq!((last.attempt.key.clone(), last.resource.ordinal), (key(3, "r3", 1), 1));
        // The application's preview takes the orphan, and looks one past the page.
        let (preview, _) = assemble(Rules::application_preview(3), Some(after), &attempts);
        assert_eq!(ids(&preview), ["c", "orphan", "d"]);
        assert!(preview.has_more());
        let (short, _) = assemble(Rules::application_preview(5), None, &attempts);
        assert_eq!((short.scanned(), short.has_more()), (5, true));
        let (all, _) = assemble(Rules::application_preview(7), None, &attempts);
        assert_eq!((all.scanned(), all.has_more()), (7, false));
        // Applied, a page exactly as long as what is left still says has_more.
        let (exact, _) = assemble(Rules::applied(6), None, &attempts);
        assert_eq!((exact.scanned(), exact.has_more()), (6, true));
        let (empty, _) = assemble(Rules::applied(6), Some(After { attempt: key(3, "r3", 1), ordinal: 2 }), &attempts);
        assert_eq!((empty.scanned(), empty.has_more(), empty.last().is_none()), (0, false, true));
    }

    #[test]
    fn a_short_fetch_is_followed_by_another_after_its_last_attempt() {
        // Many attempts without sandboxes: the first fetch (16 attempts for 10 resources at one per attempt) falls short.
        let mut attempts: Vec<(AttemptKey, bool, Vec<&str>)> = (0..40).map(|i| (key(i, "r", 1), true, vec![])).collect();
        attempts.push((key(50, "r", 1), true, vec!["x"]));
        let (page, fetches) = assemble(Rules::applied(10), None, &attempts);
        assert_eq!(ids(&page), ["x"]);
        assert!(!page.has_more());
        assert_eq!(fetches[0], FetchFrom::Start);
        assert!(matches!(&fetches[1], FetchFrom::After(k) if k.updated_at > 0));
        assert_eq!(fetches.len(), 3);
    }

    #[test]
    fn winners_are_the_first_of_each_identity_within_the_page() {
        let attempts = vec![(key(1, "r", 1), true, vec!["b", "a", "b", "c"]), (key(2, "r", 1), true, vec!["a"])];
        let (page, _) = assemble(Rules::application_preview(4), None, &attempts);
        // The look-ahead resource ("a" again) is not in the page.
        assert_eq!(page.winners(), [1, 0, 3]);
        assert_eq!(page.resources_per_attempt(), Some(2.5));
    }
}
