// Independent JavaScript statement of the application's managed-environment
// stock rules (stableJson/stockHash as the drift module describes them, the
// key set, the stock object and the metadata merge), run by the
// `javascript_parity` tests in `src/managed/rules.rs` on the same inputs as
// the Rust core. Reads cases as JSON on stdin, writes results as JSON on stdout.
const crypto = require("node:crypto");

const KUBERNETES_MARKER = "managedKubernetesSandbox";
const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

function stableJson(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  const keys = Object.keys(value).sort((a, b) => a.localeCompare(b));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(",")}}`;
}

const stockHash = (value) => `sha256:${crypto.createHash("sha256").update(stableJson(value)).digest("hex")}`;

function plainObject(value) {
  return value && typeof value === "object" && !Array.isArray(value) ? value : null;
}

function keySet(desiredMetadata, bindings) {
  const keys = new Set(["managedByPaperclip", "managedSandboxProvider", KUBERNETES_MARKER, ...Object.keys(desiredMetadata)]);
  for (const binding of bindings) {
    for (const key of Object.keys(plainObject(binding.defaultsJson.metadata) ?? {})) keys.add(key);
  }
  return [...keys].sort((a, b) => a.localeCompare(b));
}

function stockOf(row, keys) {
  const metadata = row.metadata ?? {};
  const restricted = {};
  for (const key of keys) restricted[key] = own(metadata, key) ? metadata[key] : null;
  return { name: row.name, description: row.description, config: row.config, metadata: restricted, status: row.status };
}

function merged(current, desired, keys) {
  const out = { ...(current ?? {}) };
  for (const key of keys) {
    const value = own(desired, key) ? desired[key] : null;
    if (value === null || value === undefined) delete out[key];
    else out[key] = value;
  }
  return out;
}

const cases = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const results = cases.map(({ input, row, bindings }) => {
  const config = { ...(input.config ?? {}), provider: input.provider };
  const metadata = { managedByPaperclip: true, managedSandboxProvider: input.provider, ...(input.extraMetadata ?? {}) };
  if (metadata[KUBERNETES_MARKER] !== true) metadata[KUBERNETES_MARKER] = null;
  const keys = keySet(metadata, bindings);
  const desired = { name: input.name, description: input.description ?? null, config, metadata, status: "active" };
  return {
    keys,
    latest: stockHash(stockOf(desired, keys)),
    current: stockHash(stockOf(row, keys)),
    merged: merged(row.metadata, metadata, keys),
  };
});
process.stdout.write(JSON.stringify(results));
