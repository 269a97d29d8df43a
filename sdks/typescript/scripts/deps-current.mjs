// Exit 0 when DIR/node_modules holds exactly what DIR/package-lock.json pins, 1 if not,
// so the CTest setup runs `npm ci` (which needs the registry or a warm cache) only
// when something changed: a tree installed once keeps working offline.
//
// npm records the installed tree in node_modules/.package-lock.json; its entries must
// match the lock's, package by package (version, and where the lock has them, the
// tarball and its integrity).
import { readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2] ?? ".";

function packages(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8")).packages ?? {};
  } catch {
    return null;
  }
}

const want = packages(join(dir, "package-lock.json"));
const have = packages(join(dir, "node_modules", ".package-lock.json"));
if (want === null) {
  console.error(`${dir}: no package-lock.json`);
  process.exit(1);
}
if (have === null) process.exit(1);

const installed = (key) => key.startsWith("node_modules/");
const wanted = Object.keys(want).filter(installed).sort();
const present = Object.keys(have).filter(installed).sort();
if (wanted.join("\n") !== present.join("\n")) process.exit(1);
for (const key of wanted) {
  for (const field of ["version", "resolved", "integrity", "link"]) {
    if (want[key][field] !== undefined && want[key][field] !== have[key][field]) process.exit(1);
  }
}
