// The application's stockHash, as the seeds describe it, run by real Node:
// stableJson sorts keys with localeCompare and prints scalars with JSON.stringify.
// Reads one JSON document per line on stdin (jsonb text), prints one hash per line.
const { createHash } = require("node:crypto");

function stableJson(value) {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort((left, right) => left.localeCompare(right));
    return `{${keys.map((key) => `${JSON.stringify(key)}:${stableJson(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

const lines = require("node:fs").readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
for (const line of lines) {
  const text = stableJson(JSON.parse(line));
  process.stdout.write(`sha256:${createHash("sha256").update(text).digest("hex")}\t${JSON.stringify(text)}\n`);
}
