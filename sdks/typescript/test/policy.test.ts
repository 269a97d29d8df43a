// The policy → command line translation (src/policy.ts) and the binary lookup (src/binary.ts).
import assert from "node:assert/strict";
import { test } from "node:test";

import { BinaryNotFoundError, findBinary, Sandbox, SandboxError } from "zerobox";

test("flags in zerobox's order", () => {
  const sb = new Sandbox({
    allowRead: "/usr",
    denyRead: ["/etc/a", "/etc/b"],
    allowWrite: true,
    denyWrite: ["/w/x"],
    allowNet: ["a.com", "b.com"],
    denyNet: "c.com",
    allowEnv: true,
    denyEnv: ["X"],
    env: { A: "1", B: "x=y" },
    resolve: { "h.test": "127.0.0.1" },
    upstreamCa: ["/etc/ca,1.pem", "/etc/ca2.pem"],
    secrets: { TOKEN: "v" },
    snapshot: "review",
    snapshotPaths: ["/w"],
    snapshotExclude: ["*.log", "build/"],
    noProtect: true,
    quiet: true,
    cwd: "/usr",
  });
  assert.deepEqual(sb.args, [
    "--allow-read=/usr", "--deny-read=/etc/a,/etc/b", "--allow-write", "--deny-write=/w/x",
    "--allow-net=a.com,b.com", "--deny-net=c.com", "--allow-env", "--deny-env=X",
    "--env", "A=1", "--env", "B=x=y", "--resolve", "h.test:127.0.0.1",
    "--upstream-ca=/etc/ca\\,1.pem,/etc/ca2.pem", "--secret", "TOKEN", "--review",
    "--snapshot-path=/w", "--snapshot-exclude=*.log,build/", "--no-protect", "--quiet", "-C", "/usr",
  ]);
});

test("false and empty lists give no flag", () => {
  assert.deepEqual(new Sandbox({ allowWrite: false, allowNet: [], allowEnv: false }).args, []);
});

test("commas are escaped; an item ending in a backslash closes its flag", () => {
  assert.deepEqual(new Sandbox({ allowRead: ["/a,b", "/c"] }).args, ["--allow-read=/a\\,b,/c"]);
  assert.deepEqual(new Sandbox({ denyRead: ["/x\\", "/y", "/z"] }).args, ["--deny-read=/x\\", "--deny-read=/y,/z"]);
});

test("resolve as a list of HOST:IP", () => {
  assert.deepEqual(new Sandbox({ resolve: ["a.test:127.0.0.1", "b.test:10.0.0.1"] }).args,
    ["--resolve", "a.test:127.0.0.1", "--resolve", "b.test:10.0.0.1"]);
});

test("secret values never reach argv", () => {
  const sb = new Sandbox({
    secrets: { TOKEN: "s3cret-value" },
    secretFiles: { KEY: "/run/key" },
    secretHosts: { TOKEN: ["api.test:8080", "*.api.test"], KEY: "k.test" },
    binary: process.execPath, // any executable: argv() only needs the lookup to succeed
  });
  assert.deepEqual(sb.args, [
    "--secret", "TOKEN", "--secret-file", "KEY=/run/key",
    "--secret-host", "TOKEN=api.test:8080,*.api.test", "--secret-host", "KEY=k.test",
  ]);
  const argv = sb.argv("true");
  assert.ok(!argv.join("\0").includes("s3cret-value"), argv.join(" "));
  assert.ok(!JSON.stringify(sb).includes("s3cret-value"));
});

test("invalid options are refused before zerobox runs", () => {
  assert.throws(() => new Sandbox({ snapshot: "bogus" as "review" }), TypeError);
  assert.throws(() => new Sandbox({ env: { "A=B": "1" } }), TypeError);
  assert.throws(() => new Sandbox({ allowRead: [""] }), TypeError);
  assert.throws(() => new Sandbox({ secrets: { K: "v" }, secretFiles: { K: "/f" } }), TypeError);
  assert.throws(() => new Sandbox({ secretHosts: { K: [] } }), TypeError);
  assert.throws(() => new Sandbox({ secrets: { K: "a\0b" } }), TypeError);
  const sb = new Sandbox({ binary: process.execPath });
  assert.throws(() => sb.argv("sh", "-c" as unknown as string[]), TypeError);
});

test("strict is --strict-sandbox, and runs where every layer is available", async () => {
  assert.ok(new Sandbox({ strict: true, binary: process.execPath }).argv("true").includes("--strict-sandbox"));
  assert.ok(!new Sandbox({ binary: process.execPath }).argv("true").includes("--strict-sandbox"));
  const r = await new Sandbox({ strict: true }).run("true");
  assert.equal(r.exitCode, 0, r.stderr.toString());
});

test("argv puts --status-fd before the command", () => {
  const sb = new Sandbox({ quiet: true, binary: process.execPath });
  assert.deepEqual(sb.argv("sh", ["-c", "x"], 3), [process.execPath, "--quiet", "--status-fd=3", "--", "sh", "-c", "x"]);
});

test("binary not found: the error names every path tried", async (t) => {
  await assert.rejects(new Sandbox({ binary: "/nonexistent/zerobox" }).run("true"), (e: unknown) => {
    assert.ok(e instanceof SandboxError);
    assert.ok(e instanceof BinaryNotFoundError);
    assert.equal(e.kind, "binary_not_found");
    assert.match(e.message, /\/nonexistent\/zerobox/);
    return true;
  });

  const saved = { bin: process.env["ZEROBOX_BIN"], path: process.env["PATH"] };
  t.after(() => {
    for (const [key, value] of [["ZEROBOX_BIN", saved.bin], ["PATH", saved.path]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
  process.env["ZEROBOX_BIN"] = "/nonexistent/zb";
  process.env["PATH"] = "/nonexistent-dir1:/nonexistent-dir2";
  assert.throws(() => findBinary(), (e: unknown) => {
    assert.ok(e instanceof SandboxError);
    assert.match(e.message, /\/nonexistent\/zb \(from \$ZEROBOX_BIN\)/);
    assert.match(e.message, /\/nonexistent-dir1\/zerobox, \/nonexistent-dir2\/zerobox/);
    return true;
  });
  await assert.rejects(new Sandbox().run("true"), SandboxError);
  delete process.env["ZEROBOX_BIN"];
  assert.throws(() => findBinary(), /\$ZEROBOX_BIN \(unset\)/);
});
