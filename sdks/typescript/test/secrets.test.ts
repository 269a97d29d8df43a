// Secrets (SandboxOptions.secrets, secretHosts) end to end: a plain-HTTP server on
// 127.0.0.1 records the Authorization header the sandboxed curl sent through zerobox's
// proxy.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, test } from "node:test";


import { tempDir, type TempDir } from "./helpers.js";

let tmp: TempDir;
beforeEach(async () => {
  tmp = await tempDir();
});
afterEach(() => tmp.cleanup());

test("the server gets the real value; the command sees only a placeholder", { timeout: 60_000 }, async (t) => {
  const value = `real-token-${process.pid}-${Date.now()}`;
  const seen: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.end("ok\n");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;

  const sb = tmp.sandbox({
    secrets: { TOKEN: value },
    secretHosts: { TOKEN: [`api.test:${port}`] },
    resolve: [`api.test:127.0.0.1`],
  });
  const script = `curl -s -H "Authorization: Bearer $TOKEN" http://api.test:${port}/; printenv TOKEN`;
  const r = await sb.run("sh", ["-c", script], { timeout: 50_000 });
  assert.equal(r.exitCode, 0, r.stderr.toString());
  assert.deepEqual(seen, [`Bearer ${value}`]);
  const [body, inside] = r.text().split("\n");
  assert.equal(body, "ok");
  assert.match(inside ?? "", /^ZEROBOX_SECRET_\w+$/);
  assert.ok(!r.stdout.includes(value) && !r.stderr.includes(value), "the real value never reaches the sandbox");
});
