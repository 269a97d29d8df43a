// Sandbox.run() (src/sandbox.ts, src/result.ts) against the real zerobox.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, afterEach, test } from "node:test";

import { Result, SandboxError } from "zerobox";

import { tempDir, type TempDir } from "./helpers.js";

let tmp: TempDir;
beforeEach(async () => {
  tmp = await tempDir();
});
afterEach(() => tmp.cleanup());

test("exit code, stdout and stderr", async () => {
  const r = await tmp.sandbox().run("sh", ["-c", "echo out; echo err >&2; exit 3"]);
  assert.ok(r instanceof Result);
  assert.equal(r.exitCode, 3);
  assert.equal(r.signal, null);
  assert.equal(r.ok, false);
  assert.deepEqual(r.stdout, Buffer.from("out\n"));
  assert.equal(r.text(), "out\n");
  assert.match(r.stderr.toString(), /^err$/m);
  assert.equal(r.sessionId, null);
  assert.equal(typeof r.pid, "number");
  assert.deepEqual(r.events.map((e) => e.event), ["child_started", "child_exit"]);
});

test("exit 0 is ok", async () => {
  const r = await tmp.sandbox().run("true");
  assert.equal(r.exitCode, 0);
  assert.equal(r.ok, true);
});

test("a command killed by a signal", async () => {
  const r = await tmp.sandbox().run("sh", ["-c", "kill -TERM $$"]);
  assert.equal(r.exitCode, null);
  assert.equal(r.signal, 15);
  assert.equal(r.signalName, "SIGTERM");
});

test("a setup error rejects; the command's own 125 resolves", async () => {
  const missing = join(tmp.dir, "no", "such", "dir");
  await assert.rejects(tmp.sandbox({ allowWrite: [missing] }).run("true"), (e: unknown) => {
    assert.ok(e instanceof SandboxError);
    assert.equal(e.exitCode, 125);
    assert.ok(e.message.includes(missing), e.message);
    assert.ok(!e.message.startsWith("zerobox: error:"), "the message is zerobox's, without the prefix");
    return true;
  });
  const r = await tmp.sandbox().run("sh", ["-c", "echo mine >&2; exit 125"]);
  assert.equal(r.exitCode, 125);
  assert.match(r.stderr.toString(), /mine/);
});

test("a usage error (no status events at all) rejects with exit code 2", async () => {
  await assert.rejects(tmp.sandbox({ resolve: ["not-a-mapping"] }).run("true"), (e: unknown) => {
    assert.ok(e instanceof SandboxError);
    assert.equal(e.exitCode, 2);
    assert.match(e.message, /--resolve/);
    assert.match(e.stderr.toString(), /--help/);
    return true;
  });
});

test("a missing -C directory is a setup error", async () => {
  await assert.rejects(tmp.sandbox({ cwd: join(tmp.dir, "missing") }).run("true"), { name: "SandboxError", exitCode: 125 });
});

test("command not found is 127, not an error", async () => {
  const r = await tmp.sandbox().run("no-such-command-zerobox-ts-sdk");
  assert.equal(r.exitCode, 127);
});

test("input and json()", async () => {
  const r = await tmp.sandbox().run("cat", { input: '{"a": [1, 2]}' });
  assert.deepEqual(r.json(), { a: [1, 2] });
  const bytes = await tmp.sandbox().run("cat", [], { input: new Uint8Array([0, 255, 10]) });
  assert.deepEqual(bytes.stdout, Buffer.from([0, 255, 10]));
});

test("10 MB on stdout and stderr at once, without deadlock", { timeout: 120_000 }, async () => {
  const n = 10 * 1024 * 1024;
  const r = await tmp.sandbox().run("sh", ["-c", `head -c ${n} /dev/zero & head -c ${n} /dev/zero >&2; wait`], { timeout: 110_000 });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout.length, n);
  assert.ok(r.stderr.length >= n, `stderr has ${r.stderr.length} bytes`);
});

test("env values, inheritance and deny lists", async (t) => {
  const r = await tmp.sandbox({ env: { ZB_TS_VAR: "hello, world" } }).run("sh", ["-c", 'printf %s "$ZB_TS_VAR"']);
  assert.equal(r.text(), "hello, world");

  process.env["ZB_TS_INHERIT"] = "yes";
  process.env["ZB_TS_DROP"] = "drop";
  t.after(() => {
    delete process.env["ZB_TS_INHERIT"];
    delete process.env["ZB_TS_DROP"];
  });
  const show = ["-c", 'printf %s/%s "${ZB_TS_INHERIT-unset}" "${ZB_TS_DROP-unset}"'];
  assert.equal((await tmp.sandbox().run("sh", show)).text(), "unset/unset");
  assert.equal((await tmp.sandbox({ allowEnv: ["ZB_TS_INHERIT"] }).run("sh", show)).text(), "yes/unset");
  assert.equal((await tmp.sandbox({ allowEnv: true }).run("sh", show)).text(), "yes/drop");
  assert.equal((await tmp.sandbox({ allowEnv: true, denyEnv: ["ZB_TS_DROP"] }).run("sh", show)).text(), "yes/unset");
  // hostEnv is zerobox's environment, which the command inherits only when allowed
  const host = tmp.sandbox({ hostEnv: { ...tmp.hostEnv, ZB_TS_HOST: "h" }, allowEnv: ["ZB_TS_HOST"] });
  assert.equal((await host.run("sh", ["-c", 'printf %s "$ZB_TS_HOST"'])).text(), "h");
});

test("deny-read: the file's content never shows", async () => {
  const secret = join(tmp.dir, "secret.txt");
  writeFileSync(secret, "top secret\n");
  const open = await tmp.sandbox().run("cat", [secret]);
  assert.equal(open.text(), "top secret\n");
  const denied = await tmp.sandbox({ denyRead: [secret] }).run("cat", [secret]);
  assert.notEqual(denied.exitCode, 0);
  assert.equal(denied.stdout.length, 0);
  assert.ok(!denied.stderr.toString().includes("top secret"));
});

test("writes land only where allowed", async () => {
  const target = join(tmp.dir, "out.txt");
  // /var/tmp is scratch inside the sandbox: the write succeeds but is thrown away
  const scratch = await tmp.sandbox().run("sh", ["-c", `echo x > '${target}'`]);
  assert.equal(scratch.exitCode, 0);
  assert.equal(existsSync(target), false);
  const denied = await tmp.sandbox().run("sh", ["-c", "echo x > /usr/zerobox-ts-sdk-test"]);
  assert.notEqual(denied.exitCode, 0);
  assert.equal(existsSync("/usr/zerobox-ts-sdk-test"), false);
  const work = join(tmp.dir, "work");
  mkdirSync(work);
  const kept = join(work, "kept.txt");
  const allowed = await tmp.sandbox({ allowWrite: [work], denyWrite: [join(work, "ro")] })
    .run("sh", ["-c", `echo x > '${kept}'; echo y > '${work}/ro'`]);
  assert.notEqual(allowed.exitCode, 0, "the deny-write path must fail");
  assert.equal(readFileSync(kept, "utf8"), "x\n");
});

test("a path with a comma in it", async () => {
  const dir = join(tmp.dir, "a,b");
  mkdirSync(dir);
  const r = await tmp.sandbox({ allowWrite: [dir] }).run("sh", ["-c", 'echo y > "$1/f"', "sh", dir]);
  assert.equal(r.exitCode, 0, r.stderr.toString());
  assert.equal(existsSync(join(dir, "f")), true);
});

test("cwd", async () => {
  const r = await tmp.sandbox({ cwd: "/usr" }).run("pwd");
  assert.equal(r.text(), "/usr\n");
});

test("no network by default", async () => {
  // /proc/net/dev lists the interfaces of the reader's network namespace
  const r = await tmp.sandbox().run("awk", ["-F:", 'NR > 2 { gsub(/ /, "", $1); print $1 }', "/proc/net/dev"]);
  assert.equal(r.text(), "lo\n");
});

test("concurrent runs stay apart", { timeout: 60_000 }, async () => {
  const sb = tmp.sandbox();
  const results = await Promise.all(
    [0, 1, 2, 3, 4, 5].map((i) => sb.run("sh", ["-c", `sleep 0.3; echo ${i}; echo e${i} >&2; exit ${i}`], { timeout: 50_000 })),
  );
  results.forEach((r, i) => {
    assert.equal(r.exitCode, i);
    assert.equal(r.text(), `${i}\n`);
    assert.match(r.stderr.toString(), new RegExp(`^e${i}$`, "m"));
  });
  assert.equal(new Set(results.map((r) => r.pid)).size, results.length);
});

test("deny-read: every item of the list is denied, whatever its name holds", async () => {
  // Names zerobox's list rule treats specially (",", "\,", a trailing backslash), each
  // followed by another name, and a newline.
  const names = ["trail\\", "comma,name", "two\\\\", "new\nline", "\\", "esc\\,comma", "back\\slash", ",lead", "end,\\"];
  const paths = names.map((name, i) => {
    const p = join(tmp.dir, name);
    writeFileSync(p, `zb-denied-${i}\n`);
    return p;
  });
  const control = join(tmp.dir, "control");
  writeFileSync(control, "zb-control\n");
  const script = 'for f do cat -- "$f" 2>/dev/null; done; cat -- "$0"';
  const open = await tmp.sandbox().run("sh", ["-c", script, control, ...paths]);
  names.forEach((_, i) => assert.ok(open.text().includes(`zb-denied-${i}\n`), "readable without the list"));
  const denied = await tmp.sandbox({ denyRead: paths }).run("sh", ["-c", script, control, ...paths]);
  assert.equal(denied.exitCode, 0, denied.stderr.toString());
  assert.ok(denied.text().includes("zb-control\n"));
  names.forEach((name, i) => assert.ok(!denied.text().includes(`zb-denied-${i}`), `${JSON.stringify(name)} was readable`));
});
