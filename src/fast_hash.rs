//! A fast hasher for in-memory sets and maps of the caller's own short keys.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A small multiplicative hasher (the Fx scheme) with a final mix: the keys
/// are short ids (sandbox ids, labels), where SipHash's per-call cost
/// dominated a 100k-item reconciliation. Inputs are the caller's own rows, so
/// hash flooding is not a concern.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(n as u64);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    /// The multiply leaves the low bits weak (they depend only on the low
    /// bits of the input, and sandbox ids share their first bytes), and the
    /// table indexes buckets by the low bits: mix the high bits down.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// `key`'s hash by [`FxHasher`].
pub fn hash_of<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = FxHasher::default();
    key.hash(&mut hasher);
    hasher.finish()
}

/// Rows of the caller's own columns found by their key's hash: the table keeps only the row number and 32 bits
/// of the hash, 8 bytes a slot, open addressing with linear probing, at most half full. The keys stay in the
/// caller's columns, compared only where the hash bits agree. At a million rows this is 16 MB, where a
/// `HashMap` of `(&str, Option<&str>)` keys held 40 MB and its every probe missed the caches several times
/// (`make bench-latest` measures the apply at a million; docs/design/benchmarks.md has the figures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowIndex {
    slots: Vec<u64>,
    mask: usize,
    len: usize,
}

const EMPTY: u64 = u64::MAX;

impl RowIndex {
    /// A table for up to `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        let slots = (2 * rows.max(4)).next_power_of_two();
        RowIndex { slots: vec![EMPTY; slots], mask: slots - 1, len: 0 }
    }

    /// Record `row` under `hash`. Rows of one hash are found in the order they were recorded. The table must
    /// have been made for at least as many rows as are recorded (it never grows), and a row is below `u32::MAX`.
    pub fn insert(&mut self, hash: u64, row: usize) {
        let row = u32::try_from(row).ok().filter(|&r| r != u32::MAX).expect("a row number below u32::MAX");
        // Never full (a probe ends at an empty slot): at most half the slots are used.
        assert!(2 * self.len < self.slots.len(), "more rows than the RowIndex was made for");
        self.len += 1;
        let mut at = hash as usize & self.mask;
        while self.slots[at] != EMPTY {
            at = (at + 1) & self.mask;
        }
        self.slots[at] = (hash >> 32) << 32 | row as u64;
    }

    /// The rows recorded under a hash whose 32 upper bits equal `hash`'s, in the order they were recorded: the
    /// caller compares their keys.
    pub fn rows(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let tag = hash >> 32;
        let mut at = hash as usize & self.mask;
        std::iter::from_fn(move || loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                return None;
            }
            at = (at + 1) & self.mask;
            if slot >> 32 == tag {
                return Some((slot & 0xffff_ffff) as usize);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(key: &str) -> u64 {
        let mut h = FxHasher::default();
        std::hash::Hash::hash(key, &mut h);
        h.finish()
    }

    /// Hash tables index buckets by the low bits: ids that share a prefix
    /// (`sb-…`) must still spread there, as uniform hashes would (10,000 keys
    /// over 65,536 buckets fill ~9,270 of them). Without the final mix they
    /// fell into a few dozen buckets and a 100k-row set took seconds.
    #[test]
    fn spreads_ids_with_a_common_prefix() {
        for prefix in ["sb-", "sandbox-0000", ""] {
            let keys: Vec<String> = (0..10_000).map(|i| format!("{prefix}{i}")).collect();
            let low: std::collections::BTreeSet<u64> = keys.iter().map(|k| hash(k) & 0xffff).collect();
            assert!(low.len() > 9_000, "{prefix}: {} buckets", low.len());
            let set: FastSet<&str> = keys.iter().map(String::as_str).collect();
            assert_eq!(set.len(), 10_000);
        }
    }

    /// Rows are found by their hash in the order recorded, colliding hashes and full runs of slots included,
    /// and a hash never recorded finds only rows whose upper bits it shares.
    #[test]
    fn row_index_finds_every_row_of_a_hash_in_order() {
        let mut index = RowIndex::with_capacity(1000);
        let hash = |i: usize| hash_of(&format!("sb-{}", i % 300));
        for i in 0..1000 {
            index.insert(hash(i), i);
        }
        for key in 0..300 {
            let rows: Vec<usize> = index.rows(hash(key)).filter(|&r| r % 300 == key).collect();
            let expected: Vec<usize> = (0..1000).filter(|r| r % 300 == key).collect();
            assert_eq!(rows, expected, "sb-{key}");
        }
        assert_eq!(index.rows(hash_of("absent")).filter(|&r| hash(r) == hash_of("absent")).count(), 0);
        // Slots sharing one home: the same hash 8 times fills a run, all found.
        let mut crowded = RowIndex::with_capacity(8);
        (0..8).for_each(|row| crowded.insert(42, row));
        assert_eq!(crowded.rows(42).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        // A hash with other upper bits passes over them.
        assert_eq!(crowded.rows(42 | 1 << 40).count(), 0);
    }
}
