// `npm run build`: the ESM and CommonJS builds of src/ (each with .d.ts files) and the
// compiled tests, from a clean dist/.
//
// The package is "type": "module", so dist/cjs gets its own package.json saying
// "commonjs"; without it Node would load the CommonJS build as ESM and fail.
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

rmSync(join(root, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.esm.json", "tsconfig.cjs.json", "tsconfig.test.json"]) {
  const r = spawnSync(process.execPath, [tsc, "-p", project], { cwd: root, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`tsc -p ${project} failed`);
    process.exit(r.status ?? 1);
  }
}
writeFileSync(join(root, "dist", "cjs", "package.json"), '{ "type": "commonjs" }\n');
// src/module-dir.ts is the CommonJS form (__dirname); an ES module finds its directory
// through import.meta.url, which TypeScript refuses in a file that also builds to CommonJS.
writeFileSync(
  join(root, "dist", "esm", "module-dir.js"),
  [
    'import { dirname } from "node:path";',
    'import { fileURLToPath } from "node:url";',
    "/** The directory this module was loaded from. */",
    "export function moduleDir() {",
    "  return dirname(fileURLToPath(import.meta.url));",
    "}",
    "",
  ].join("\n"),
);
