#!/usr/bin/env bash
# The one benchmark table: collects the BENCH lines the bench scripts print
#   BENCH|<name>|<value>|<unit>|<target>|<met>|<detail>
# (docs/design/benchmarks.md describes them) from the given logs, or stdin, and prints
# one row per benchmark: every row `make bench` is meant to produce, in a fixed
# order, then any other BENCH line. A row whose line is missing says "not run";
# met/missed is re-checked from the value and the target.
# Usage: bench/table.sh [log ...]
set -euo pipefail

# The rows of the table, in order. Names ending in `*` stand for any row of that
# prefix (batch sizes that ran besides the targeted one).
EXPECTED=(
  stock.regular stock.distinct stock.mixed
  managed.unchanged managed.updated managed.added managed.drift
  managed.growth.table_update managed.growth.unchanged managed.growth.updated managed.growth.added managed.growth.drift
)
for ledger in stats nostats steady; do
  for n in 1k 10k 100k; do EXPECTED+=("reconcile.$ledger.$n.dry" "reconcile.$ledger.$n.apply"); done
  EXPECTED+=("reconcile.$ledger.growth.dry" "reconcile.$ledger.growth.apply")
done
EXPECTED+=(reconcile.history.apply reconcile.history.dry reconcile.history.50x.apply reconcile.history.50x.dry)
for shape in clean messy; do
  EXPECTED+=("backfill.$shape.b1000" "backfill.$shape.b1000.pages" "backfill.$shape.b*")
done
EXPECTED+=(recorder.100k recorder.100k.memory)
EXPECTED+=(tick.1m.total tick.1m.listing tick.1m.record tick.1m.apply tick.1m.memory)
EXPECTED+=(latest.growth.apply latest.growth.dry latest.100k.apply latest.100k.dry latest.1m.apply latest.1m.dry)

cat "$@" | { grep -a '^BENCH|' || true; } | awk -F'|' -v expected="${EXPECTED[*]}" '
function checked(value, target,    op, limit) {
  if (target !~ /^(<=|>=) *[-0-9.]+$/) return "-"
  op = substr(target, 1, 2); limit = substr(target, 3) + 0
  if (op == "<=") return (value + 0 <= limit) ? "met" : "missed"
  return (value + 0 >= limit) ? "met" : "missed"
}
function row(name,    result, figure) {
  if ((name in value) && value[name] !~ /^-?[0-9]+([.][0-9]+)?(e[-+]?[0-9]+)?$/) {
    printf "%-30s  %-32s  %-9s  %-7s  %s\n", name, value[name], "-", "not run", "not a number: the script measured nothing"
    notrun++
    return
  }
  if (!(name in value)) {
    printf "%-30s  %-32s  %-9s  %-7s  %s\n", name, "-", "-", "not run", "no BENCH line"
    notrun++
    return
  }
  result = checked(value[name], target[name])
  if (result == "-") nogoal++
  else if (result == "met") met++
  else missed++
  # A script that judged otherwise than its own figure says so.
  if (said[name] != "" && said[name] != "-" && said[name] != result) { result = result "!"; disagree++ }
  figure = value[name] " " unit[name]
  printf "%-30s  %-32s  %-9s  %-7s  %s\n", name, figure, target[name], result, detail[name]
  shown[name] = 1
}
{
  # The last line of a name wins (a rerun appended to the same log).
  name = $2
  if (!(name in value)) order[++seen] = name
  value[name] = $3; unit[name] = $4; target[name] = ($5 == "" ? "-" : $5); said[name] = $6; detail[name] = $7
}
END {
  printf "%-30s  %-32s  %-9s  %-7s  %s\n", "benchmark", "figure", "target", "result", "detail"
  printf "%-30s  %-32s  %-9s  %-7s  %s\n", "---------", "------", "------", "------", "------"
  n = split(expected, names, " ")
  for (i = 1; i <= n; i++) {
    if (names[i] ~ /\*$/) {
      prefix = substr(names[i], 1, length(names[i]) - 1)
      for (j = 1; j <= seen; j++)
        if (index(order[j], prefix) == 1 && !(order[j] in shown) && !(order[j] in wanted)) row(order[j])
    } else {
      wanted[names[i]] = 1
      row(names[i])
    }
  }
  for (j = 1; j <= seen; j++) if (!(order[j] in shown) && !(order[j] in wanted)) row(order[j])
  printf "\n%d met, %d missed, %d without a target, %d not run\n", met, missed, nogoal, notrun
  if (disagree) printf "a result marked ! disagrees with the met/missed its script printed\n"
}'
