// Both published entry points (package.json "exports") load and work.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import * as esm from "zerobox";

const require = createRequire(import.meta.url);

const API = [
  "Sandbox",
  "SandboxProcess",
  "Result",
  "SandboxError",
  "BinaryNotFoundError",
  "SetupFailedError",
  "SnapshotFailedError",
  "SandboxTimeoutError",
  "SandboxAbortError",
  "SandboxCancelledError",
  "ProtocolError",
  "findBinary",
  "escapeListItem",
  "snapshots",
];

test("the ESM entry point", async () => {
  const path = import.meta.resolve("zerobox");
  assert.match(path, /\/dist\/esm\/index\.js$/);
  assert.match(readFileSync(new URL(path), "utf8"), /^export /m);
  assert.deepEqual(Object.keys(esm).sort(), [...API].sort());
  const r = await new esm.Sandbox().run("sh", ["-c", "echo esm"]);
  assert.equal(r.text(), "esm\n");
});

test("the CommonJS entry point", async () => {
  const path = require.resolve("zerobox");
  assert.match(path, /\/dist\/cjs\/index\.js$/);
  const cjs = require("zerobox") as typeof esm;
  assert.deepEqual(Object.keys(cjs).sort(), [...API].sort());
  assert.deepEqual(Object.keys(cjs.snapshots).sort(), Object.keys(esm.snapshots).sort());
  assert.notStrictEqual(cjs.Sandbox, esm.Sandbox, "a separate build, not the ESM one");
  const r = await new cjs.Sandbox().run("sh", ["-c", "echo cjs"]);
  assert.equal(r.text(), "cjs\n");
  const e = await new cjs.Sandbox({ allowWrite: ["/nonexistent/a/b"] }).run("true").catch((x: unknown) => x);
  assert.ok(e instanceof cjs.SandboxError);
});

test("type declarations ship with both builds", () => {
  const pkg = require("zerobox/package.json") as { exports: Record<string, Record<string, { types: string }>> };
  for (const condition of ["import", "require"]) {
    const types = pkg.exports["."]?.[condition]?.types;
    assert.ok(types, condition);
    assert.match(readFileSync(require.resolve(`zerobox/package.json`).replace(/package\.json$/, types), "utf8"), /export declare class Sandbox|export \{ Sandbox/);
  }
});
