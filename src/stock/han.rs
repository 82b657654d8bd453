//! Han in the application's order. Node's full ICU builds its root collation
//! with Han ideographs in radical-stroke order (CLDR's "unihan" root), while
//! ICU4X's compiled root orders them implicitly: the core block (U+4E00..U+9FFF
//! and the twelve unified ideographs among U+F900..U+FAFF) by code point, then
//! every other block by code point. Everything else is the same CLDR 48 root,
//! and in both each ideograph has a primary weight of its own, with the same
//! secondary and tertiary weights; so the two orders differ only in which Han
//! primary is smaller.
//!
//! `proxy` rewrites a string so that ICU4X's primary weights for it order as
//! Node's do: the ideograph of Node rank r becomes the ideograph of ICU4X rank r,
//! and a character carrying Han weights otherwise (a compatibility ideograph, a
//! Kangxi radical, "㈠") becomes a string of the same primary weights, rewritten
//! the same way. Comparing the proxies at primary strength, then the texts
//! themselves with the full collator (which by then only sees secondary and
//! tertiary differences), is Node's order. The data is `han_order.txt`, written
//! from Node by `scripts/han_order.js`.

use std::sync::OnceLock;

const DATA: &str = include_str!("han_order.txt");

/// No character below U+2E80 (CJK Radicals Supplement) carries a Han weight;
/// in UTF-8 they are the bytes below 0xE2 (U+2000).
const FIRST_HAN_LEAD_BYTE: u8 = 0xe2;

struct HanTable {
    /// Unified_Ideograph code points as runs (first, last, index of first) by code point.
    blocks: Vec<(u32, u32, u32)>,
    /// By index: the ideograph of the same ICU4X rank as this one's Node rank.
    proxies: Box<[char]>,
    /// Other characters carrying Han weights, by code point, with proxy strings.
    equivalents: Vec<(char, Box<str>)>,
}

fn table() -> &'static HanTable {
    static TABLE: OnceLock<HanTable> = OnceLock::new();
    TABLE.get_or_init(|| HanTable::parse(DATA))
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s, 16).unwrap_or_else(|_| panic!("han_order.txt: bad code point {s:?}"))
}

fn char_of(cp: u32) -> char {
    char::from_u32(cp).unwrap_or_else(|| panic!("han_order.txt: bad code point {cp:X}"))
}

/// ICU4X's implicit weights put these blocks' ideographs before all others.
fn in_core_block(cp: u32) -> bool {
    (0x4e00..=0x9fff).contains(&cp) || (0xf900..=0xfaff).contains(&cp)
}

impl HanTable {
    fn parse(data: &str) -> HanTable {
        let mut section = "";
        let mut node_order: Vec<u32> = Vec::with_capacity(110_000);
        let mut equivalents: Vec<(char, Vec<u32>)> = Vec::with_capacity(2_000);
        for line in data.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            if line.starts_with('[') {
                section = line;
                continue;
            }
            match section {
                "[order]" => {
                    for run in line.split(' ') {
                        let (first, last) = run.split_once('-').unwrap_or((run, run));
                        node_order.extend(hex(first)..=hex(last));
                    }
                }
                "[equivalents]" => {
                    let mut cps = line.split(' ').map(hex);
                    let c = char_of(cps.next().unwrap());
                    equivalents.push((c, cps.collect()));
                }
                _ => panic!("han_order.txt: line outside a section: {line:?}"),
            }
        }
        let mut by_code_point = node_order.clone();
        by_code_point.sort_unstable();
        let mut blocks: Vec<(u32, u32, u32)> = Vec::new();
        for (index, &cp) in by_code_point.iter().enumerate() {
            match blocks.last_mut() {
                Some(block) if block.1 + 1 == cp => block.1 = cp,
                _ => blocks.push((cp, cp, index as u32)),
            }
        }
        let mut icu4x_order = by_code_point;
        icu4x_order.sort_by_key(|&cp| (!in_core_block(cp), cp));
        let mut table = HanTable { blocks, proxies: vec!['\0'; node_order.len()].into(), equivalents: Vec::new() };
        for (rank, &cp) in node_order.iter().enumerate() {
            let index = table.index(cp).expect("an ideograph of the order");
            table.proxies[index] = char_of(icu4x_order[rank]);
        }
        let mut proxied: Vec<(char, Box<str>)> = equivalents
            .into_iter()
            .map(|(c, same)| {
                let proxied = same.into_iter().map(char_of).map(|x| table.ideograph_proxy(x).unwrap_or(x));
                (c, proxied.collect::<String>().into_boxed_str())
            })
            .collect();
        proxied.sort_unstable_by_key(|(c, _)| *c);
        table.equivalents = proxied;
        table
    }

    /// The index of a Unified_Ideograph in `proxies`.
    fn index(&self, cp: u32) -> Option<usize> {
        let after = self.blocks.partition_point(|block| block.0 <= cp);
        let &(first, last, start) = self.blocks.get(after.checked_sub(1)?)?;
        (cp <= last).then(|| (start + cp - first) as usize)
    }

    fn ideograph_proxy(&self, c: char) -> Option<char> {
        self.index(c as u32).map(|i| self.proxies[i])
    }

    fn equivalent(&self, c: char) -> Option<&str> {
        let i = self.equivalents.binary_search_by_key(&c, |(e, _)| *e).ok()?;
        Some(&self.equivalents[i].1)
    }
}

/// `s` with every character carrying a Han weight replaced by its proxy, or
/// None when it has none (then ICU4X already orders it as Node does).
pub(super) fn proxy(s: &str) -> Option<String> {
    if !s.bytes().any(|b| b >= FIRST_HAN_LEAD_BYTE) {
        return None;
    }
    let table = table();
    let carries = |c: char| c >= '\u{2e80}' && (table.index(c as u32).is_some() || table.equivalent(c).is_some());
    let first = s.char_indices().find(|&(_, c)| carries(c))?.0;
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        match (c >= '\u{2e80}').then(|| (table.ideograph_proxy(c), table.equivalent(c))) {
            Some((Some(p), _)) => out.push(p),
            Some((None, Some(same))) => out.push_str(same),
            _ => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_ideograph_once() {
        let t = table();
        assert_eq!(t.proxies.len(), 101_996);
        let mut proxies: Vec<char> = t.proxies.to_vec();
        proxies.sort_unstable();
        proxies.dedup();
        assert_eq!(proxies.len(), t.proxies.len(), "the proxies are a permutation of the ideographs");
        assert!(proxies.iter().all(|&p| t.index(p as u32).is_some()));
        assert_eq!(t.equivalents.len(), 1_567);
        assert!(t.blocks.windows(2).all(|w| w[0].1 + 1 < w[1].0), "blocks are maximal runs");
    }

    fn primary_collator() -> icu_collator::CollatorBorrowed<'static> {
        let mut options = icu_collator::options::CollatorOptions::default();
        options.strength = Some(icu_collator::options::Strength::Primary);
        icu_collator::Collator::try_new(icu_locale_core::locale!("en-US").into(), options).unwrap()
    }

    #[test]
    fn icu4x_orders_the_ideographs_as_assumed() {
        // The proxies rely on ICU4X's implicit order: core blocks first, then by
        // code point, every ideograph a primary weight of its own.
        let t = table();
        let mut ideographs: Vec<char> = t.proxies.to_vec();
        ideographs.sort_unstable_by_key(|&c| (!in_core_block(c as u32), c));
        let collator = primary_collator();
        for pair in ideographs.windows(2) {
            let (a, b) = (pair[0].to_string(), pair[1].to_string());
            assert_eq!(collator.compare(&a, &b), std::cmp::Ordering::Less, "{a} {b}");
        }
        // Han comes after every other script's letters and before unassigned code points.
        let (first, last) = (ideographs[0].to_string(), ideographs[ideographs.len() - 1].to_string());
        for other in ["z", "ꓽ", "𞤀", "ア", "가", "〇", "ꀀ"] {
            assert_eq!(collator.compare(other, &first), std::cmp::Ordering::Less, "{other}");
        }
        assert_eq!(collator.compare(&last, "\u{40000}"), std::cmp::Ordering::Less);
    }

    #[test]
    fn icu4x_gives_equivalents_the_primary_weights_node_does() {
        // Each equivalent (as the data lists it, before proxies) has the
        // character's primary weights in ICU4X too.
        let collator = primary_collator();
        let mut section = "";
        let mut checked = 0;
        for line in DATA.lines().filter(|l| !l.starts_with('#')) {
            if line.starts_with('[') {
                section = line;
                continue;
            }
            if section != "[equivalents]" {
                continue;
            }
            let mut cps = line.split(' ').map(|h| char_of(hex(h)));
            let c = cps.next().unwrap().to_string();
            let same: String = cps.collect();
            assert_eq!(collator.compare(&c, &same), std::cmp::Ordering::Equal, "{line}");
            checked += 1;
        }
        assert_eq!(checked, 1_567);
    }

    #[test]
    fn strings_without_han_weights_have_no_proxy() {
        for s in ["", "abc", "é", "ア", "가", "α", "😀", "々", "〇", "\u{2e7f}"] {
            assert_eq!(proxy(s), None, "{s:?}");
        }
        assert!(proxy("a一").is_some());
        assert!(proxy("⼀").is_some());
        assert!(proxy("豈").is_some());
    }
}
