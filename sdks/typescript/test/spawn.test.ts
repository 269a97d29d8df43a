// Sandbox.spawn(), kill(), timeouts and AbortSignal (src/process.ts) against the real
// zerobox. The kill tests find the grandchild's host pid while it runs and check that
// it is gone afterwards.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, test } from "node:test";

import { SandboxAbortError, SandboxCancelledError, SandboxError, SandboxTimeoutError, type StatusEvent } from "zerobox";

import { assertGone, grandchildScript, hostProcess, isAlive, killIfAlive, readPid, tempDir, waitFor, type HostProcess, type TempDir } from "./helpers.js";

let tmp: TempDir;
let grandchildren: HostProcess[] = [];
beforeEach(async () => {
  tmp = await tempDir();
});
afterEach(() => {
  grandchildren.forEach(killIfAlive);
  grandchildren = [];
  tmp.cleanup();
});

/** Waits for the grandchild to start and returns its host process. */
async function findGrandchild(pidFile: string, commandPid: () => number | null): Promise<HostProcess> {
  const inner = await waitFor("the grandchild's pid file", () => readPid(pidFile));
  const cmd = await waitFor("child_started", () => commandPid() ?? undefined);
  const p = await waitFor("the grandchild on the host", () => hostProcess(cmd, inner));
  grandchildren.push(p);
  assert.ok(isAlive(p), "the grandchild runs before the kill (else the check below proves nothing)");
  return p;
}

test("output streams while the command runs", { timeout: 30_000 }, async () => {
  const flag = join(tmp.dir, "go");
  const p = tmp.sandbox({ allowWrite: [tmp.dir] })
    .spawn("sh", ["-c", `echo first; while [ ! -e '${flag}' ]; do sleep 0.05; done; echo second`]);
  const lines = createInterface({ input: p.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  assert.equal(first.value, "first");
  assert.equal(p.running, true, "the first line arrives before the command ends (it waits for the flag)");
  writeFileSync(flag, "");
  const second = await lines.next();
  assert.equal(second.value, "second");
  const r = await p.wait();
  assert.equal(r.exitCode, 0);
  assert.equal(p.running, false);
});

test("wait() collects the output nobody read", async () => {
  const p = tmp.sandbox().spawn("sh", ["-c", "echo a; echo b >&2"]);
  const r = await p.wait();
  assert.equal(r.text(), "a\n");
  assert.match(r.stderr.toString(), /^b$/m);
  assert.strictEqual(await p.wait(), r, "wait() is idempotent");
});

test("stdin as a pipe, and status events as they come", async () => {
  const events: StatusEvent[] = [];
  const p = tmp.sandbox().spawn("sh", ["-c", "read x; echo got $x"], { stdin: "pipe", onEvent: (e) => events.push(e) });
  p.stdin?.end("hello\n");
  const r = await p.wait();
  assert.equal(r.text(), "got hello\n");
  assert.deepEqual(events.map((e) => e.event), ["child_started", "child_exit"]);
  assert.equal(p.commandPid, r.pid);
});

test("kill() takes down the sandbox and its grandchild", { timeout: 30_000 }, async () => {
  const pidFile = join(tmp.dir, "grandchild.pid");
  const p = tmp.sandbox({ allowWrite: [tmp.dir] }).spawn("sh", ["-c", grandchildScript(pidFile)]);
  const grandchild = await findGrandchild(pidFile, () => p.commandPid);
  assert.equal(p.kill(), true);
  await assert.rejects(p.wait(), (e: unknown) => {
    assert.ok(e instanceof SandboxError);
    assert.ok(e instanceof SandboxCancelledError);
    assert.equal(e.kind, "cancelled");
    assert.equal(e.signal, "SIGKILL");
    return true;
  });
  await assertGone(grandchild);
  assert.equal(p.kill(), false, "nothing left to kill");
});

test("a timeout kills the whole tree", { timeout: 30_000 }, async () => {
  const pidFile = join(tmp.dir, "grandchild.pid");
  let commandPid: number | null = null;
  let grandchild: Promise<HostProcess> | undefined;
  const started = Date.now();
  const run = tmp.sandbox({ allowWrite: [tmp.dir] }).run("sh", ["-c", grandchildScript(pidFile)], {
    timeout: 3000,
    onEvent: (e) => {
      if (e.event === "child_started") {
        commandPid = e.pid;
        grandchild = findGrandchild(pidFile, () => commandPid);
      }
    },
  });
  await assert.rejects(run, (e: unknown) => {
    assert.ok(e instanceof SandboxTimeoutError);
    assert.equal(e.timeout, 3000);
    return true;
  });
  assert.ok(Date.now() - started < 15_000);
  assert.ok(grandchild, "the command started");
  await assertGone(await grandchild);
});

test("an AbortSignal kills the whole tree", { timeout: 30_000 }, async () => {
  const pidFile = join(tmp.dir, "grandchild.pid");
  const controller = new AbortController();
  const p = tmp.sandbox({ allowWrite: [tmp.dir] }).spawn("sh", ["-c", grandchildScript(pidFile)], { signal: controller.signal });
  const grandchild = await findGrandchild(pidFile, () => p.commandPid);
  controller.abort(new Error("user cancelled"));
  await assert.rejects(p.wait(), (e: unknown) => {
    assert.ok(e instanceof SandboxAbortError);
    assert.equal(e.name, "AbortError");
    assert.equal((e.cause as Error).message, "user cancelled");
    return true;
  });
  await assertGone(grandchild);
});

test("an AbortSignal with run()", { timeout: 30_000 }, async () => {
  const started = Date.now();
  const r = tmp.sandbox().run("sleep", ["20"], { signal: AbortSignal.timeout(500) });
  await assert.rejects(r, { name: "AbortError" });
  assert.ok(Date.now() - started < 10_000, "the abort killed the sandbox, rather than waiting for it");
});

test("an aborted signal never starts zerobox; a late one changes nothing", async () => {
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(tmp.sandbox().run("true", { signal: controller.signal }), SandboxAbortError);

  const late = new AbortController();
  const r = await tmp.sandbox().run("sh", ["-c", "exit 4"], { signal: late.signal, timeout: 60_000 });
  late.abort();
  assert.equal(r.exitCode, 4);
});

test("process.exit() in the host program kills running sandboxes", { timeout: 30_000 }, async () => {
  // A separate Node program starts a sandbox, reports its pids, and on a word from us
  // calls process.exit() while the sandbox still runs.
  const pidFile = join(tmp.dir, "grandchild.pid");
  const program = `
    import { Sandbox } from "zerobox";
    import { existsSync } from "node:fs";
    const p = new Sandbox({ allowWrite: [${JSON.stringify(tmp.dir)}] }).spawn("sh", ["-c", ${JSON.stringify(grandchildScript(pidFile))}]);
    while (!existsSync(${JSON.stringify(pidFile)}) || p.commandPid === null) await new Promise((r) => setTimeout(r, 20));
    console.log(p.commandPid);
    process.stdin.once("data", () => process.exit(0));
  `;
  const root = fileURLToPath(new URL("../..", import.meta.url)); // the package, for `import "zerobox"`
  const host = spawn(process.execPath, ["--input-type=module", "-e", program], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
  const [line] = (await once(createInterface({ input: host.stdout }), "line")) as [string];
  const grandchild = await findGrandchild(pidFile, () => Number(line));
  host.stdin.end("exit\n");
  const [code] = (await once(host, "exit")) as [number];
  assert.equal(code, 0);
  await assertGone(grandchild);
});
