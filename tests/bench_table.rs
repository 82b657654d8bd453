//! bench/table.sh, the one table `make bench` ends with (docs/design/benchmarks.md): every row it expects in its
//! fixed order, a missing one `not run`, other rows after them, met/missed judged again from the value and
//! the target whatever the script said (a disagreement marked `!`), the last line of a name winning.
//! No database needed.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn table(input: &str) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/table.sh");
    let mut child = Command::new("bash")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash runs bench/table.sh");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "bench/table.sh failed");
    String::from_utf8(out.stdout).unwrap()
}

/// (name, figure, result) of each row, in the table's order (columns of `%-30s  %-32s  %-9s  %-7s  %s`).
fn rows(table: &str) -> Vec<(String, String, String)> {
    let col = |l: &str, from: usize, to: usize| l.get(from..to.min(l.len())).unwrap_or("").trim().to_string();
    table.lines().skip(2).take_while(|l| !l.is_empty()).map(|l| (col(l, 0, 30), col(l, 32, 64), col(l, 77, 84))).collect()
}

#[test]
fn the_table_keeps_its_order_and_judges_every_row_from_its_figure() {
    let out = table(concat!(
        "BENCH|backfill.messy.b1000|63357|resources/s|>= 60000|met|whole backfill\n",
        "BENCH|extra.row|1|x|-|-|not one of the expected rows\n",
        "BENCH|reconcile.nostats.100k.apply|4.20|x join|<= 5|met|an earlier line of the same name\n",
        "a line of a report, not a result: BENCH|stock.distinct|1|x|-|-|\n",
        "BENCH|backfill.clean.b500|60315|resources/s|-|-|another batch size\n",
        "BENCH|reconcile.nostats.100k.apply|7.15|x join|<= 5|met|the script judged wrongly\n",
        "BENCH|stock.regular|0.94|x pgcrypto time|<= 1.5|missed|and wrongly again\n",
        "BENCH|reconcile.history.apply|1.30|x time without history|<= 1.3|met|the bound itself\n",
    ));
    let rows = rows(&out);
    let find = |name: &str| rows.iter().position(|r| r.0 == name).unwrap_or_else(|| panic!("no row {name}:\n{out}"));
    // Judged from the figure: 7.15 > 5 is missed, 0.94 <= 1.5 met, 1.30 <= 1.3 met; `!` where the script differed.
    assert_eq!(rows[find("reconcile.nostats.100k.apply")].1, "7.15 x join");
    assert_eq!(rows[find("reconcile.nostats.100k.apply")].2, "missed!");
    assert_eq!(rows[find("stock.regular")].2, "met!");
    assert_eq!(rows[find("reconcile.history.apply")].2, "met");
    assert_eq!(rows[find("backfill.messy.b1000")].2, "met");
    assert_eq!(rows[find("backfill.clean.b500")].2, "-");
    // A missing row and a name only quoted inside a report line: not run.
    assert_eq!(rows[find("stock.distinct")].2, "not run");
    assert_eq!(rows[find("reconcile.stats.100k.dry")].2, "not run");
    // The fixed order: stock first, the other batch sizes after their shape's targeted rows, strangers last.
    assert_eq!(find("stock.regular"), 0);
    assert!(find("reconcile.history.apply") < find("backfill.clean.b1000"));
    assert!(find("backfill.clean.b1000.pages") < find("backfill.clean.b500"));
    assert!(find("backfill.clean.b500") < find("backfill.messy.b1000"));
    assert_eq!(find("extra.row"), rows.len() - 1);
    assert!(out.contains("\n3 met, 1 missed, 2 without a target, 53 not run\n"), "{out}");
    assert!(out.contains("disagrees with the met/missed its script printed"), "{out}");
}
