// Sorts JSON strings (one per line on stdin) with the application's comparison,
// localeCompare, ties by UTF-16 code units; prints one line per string: "=" if it
// compares equal to the one before, else "<", a tab, then the string as JSON.
const lines = require("node:fs").readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
const strings = lines.map((l) => JSON.parse(l));
const compare = (left, right) => left.localeCompare(right);
strings.sort((a, b) => compare(a, b) || (a < b ? -1 : a > b ? 1 : 0));
const out = strings.map((s, i) => `${i > 0 && compare(strings[i - 1], s) === 0 ? "=" : "<"}\t${JSON.stringify(s)}`);
process.stdout.write(out.join("\n") + "\n");
