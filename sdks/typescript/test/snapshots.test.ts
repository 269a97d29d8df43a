// The snapshot subcommands (src/snapshots.ts) and session fields of run() against the real zerobox.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import { SandboxError, snapshots } from "zerobox";

import { tempDir, type TempDir } from "./helpers.js";

let tmp: TempDir;
let work: string;
beforeEach(async () => {
  tmp = await tempDir();
  work = join(tmp.dir, "work");
  mkdirSync(work);
});
afterEach(() => tmp.cleanup());

test("review → diff → accept → file present → restore → file gone", async () => {
  const changed = join(work, "file.txt");
  const added = join(work, "new.txt");
  writeFileSync(changed, "before\n");
  const sb = tmp.sandbox({ allowWrite: [work], snapshot: "review", snapshotPaths: [work], cwd: work });
  const r = await sb.run("sh", ["-c", "echo after > file.txt; echo new > new.txt"]);
  assert.equal(r.exitCode, 0, r.stderr.toString());
  assert.match(r.sessionId ?? "", /^[0-9a-f]{32}$/);
  assert.equal(r.sessionState, "pending");
  assert.equal(r.sessionChanges, 2);
  assert.deepEqual(r.session, { id: r.sessionId, state: "pending", changes: 2 });
  const id = r.sessionId as string;
  assert.equal(readFileSync(changed, "utf8"), "before\n", "review applies nothing yet");
  assert.equal(existsSync(added), false);

  const opts = { hostEnv: tmp.hostEnv };
  const d = await snapshots.diff(id, opts);
  assert.equal(d.session, id);
  const byPath = new Map(d.changes.map((c) => [c.path, c]));
  assert.equal(byPath.get(changed)?.kind, "modified");
  assert.equal(byPath.get(added)?.kind, "added");
  assert.equal(byPath.get(added)?.new_type, "file");
  const only = await snapshots.diff(id, { ...opts, paths: [added] });
  assert.deepEqual(only.changes.map((c) => c.path), [added]);
  assert.match(await snapshots.diffText(id, opts), /^\+after$/m);

  assert.ok((await snapshots.list(opts)).some((s) => s.id === id));
  const info = await snapshots.show(id.slice(0, 8), opts);
  assert.equal(info.id, id);
  assert.equal(info.state, "pending");
  assert.equal(info.mode, "review");

  await snapshots.accept(id, opts);
  assert.equal(readFileSync(changed, "utf8"), "after\n");
  assert.equal(readFileSync(added, "utf8"), "new\n");
  // nanosecond times come as exact bigints (as numbers they would be rounded)
  const mtime = byPath.get(added)?.new_mtime_ns;
  assert.equal(typeof mtime, "bigint");
  assert.equal(mtime, statSync(added, { bigint: true }).mtimeNs);
  assert.equal((await snapshots.show(id, opts)).state, "accepted");

  await snapshots.restore(id, opts);
  assert.equal(readFileSync(changed, "utf8"), "before\n");
  assert.equal(existsSync(added), false);
  await assert.rejects(snapshots.restore(id, opts), (e: unknown) => {
    assert.ok(e instanceof SandboxError, "restoring twice is refused");
    assert.equal(e.exitCode, 1);
    assert.match(e.message, /zerobox/);
    return true;
  });
});

test("accept refuses a conflict unless forced", async () => {
  const f = join(work, "f");
  writeFileSync(f, "v1\n");
  const opts = { hostEnv: tmp.hostEnv };
  const r = await tmp.sandbox({ allowWrite: [work], snapshot: "review", snapshotPaths: [work] }).run("sh", ["-c", `echo sandbox > '${f}'`]);
  writeFileSync(f, "host changed it, longer\n");
  await assert.rejects(snapshots.accept(r.sessionId as string, opts), SandboxError);
  assert.equal(readFileSync(f, "utf8"), "host changed it, longer\n");
  await snapshots.accept(r.sessionId as string, { ...opts, force: true });
  assert.equal(readFileSync(f, "utf8"), "sandbox\n");
});

test("discard, --snapshot and --restore modes, unknown ids", async () => {
  const opts = { hostEnv: tmp.hostEnv };
  const pending = await tmp.sandbox({ allowWrite: [work], snapshot: "review", snapshotPaths: [work] }).run("sh", ["-c", `echo n > '${work}/n'`]);
  await snapshots.discard(pending.sessionId as string, opts);
  assert.equal(existsSync(join(work, "n")), false);
  assert.equal((await snapshots.show(pending.sessionId as string, opts)).state, "discarded");

  const applied = await tmp.sandbox({ allowWrite: [work], snapshot: "snapshot", snapshotPaths: [work] }).run("sh", ["-c", `echo s > '${work}/s'`]);
  assert.equal(applied.sessionState, "accepted");
  assert.equal(existsSync(join(work, "s")), true);

  const undone = await tmp.sandbox({ allowWrite: [work], snapshot: "restore", snapshotPaths: [work] }).run("sh", ["-c", `echo r > '${work}/r'`]);
  assert.equal(undone.sessionState, "restored");
  assert.equal(existsSync(join(work, "r")), false);

  await assert.rejects(snapshots.show("ffffffffffffffff", opts), SandboxError);
  await assert.rejects(snapshots.show("ffffffffffffffff", opts), { name: "SandboxError", kind: "snapshot_failed" });
  await assert.rejects(snapshots.accept("--force", opts), TypeError);
  await assert.rejects(snapshots.clean(-1, opts), RangeError);
  await snapshots.clean(30, opts);
});
