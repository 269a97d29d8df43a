// The golden --status-fd streams of tests/fixtures/status-fd, replayed by a stand-in for
// zerobox (replay.sh there) and decoded by run(), against the values of expected.json
// there (the C++, Python and Rust tests check the same streams against the same values).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Sandbox, SandboxError, SetupFailedError, type ErrorKind, type NetEvent } from "zerobox";

// dist/test/ → the repository's tests/fixtures/status-fd
const FIXTURES = fileURLToPath(new URL("../../../../tests/fixtures/status-fd/", import.meta.url));

interface Expected {
  protocol: number;
  streams: {
    file: string;
    zerobox_exit: number;
    events: number;
    error?: { kind: ErrorKind; message: string };
    result?: {
      exit_code: number | null;
      signal: number | null;
      pid: number;
      session: { id: string; state: string; changes: number } | null;
      net: { host: string; port: number; action: string; reason: string }[];
    };
  }[];
}

const expected = JSON.parse(readFileSync(join(FIXTURES, "expected.json"), "utf8")) as Expected;

function replay(file: string, exit: number): Sandbox {
  return new Sandbox({
    binary: join(FIXTURES, "replay.sh"),
    hostEnv: { ZB_REPLAY_STREAM: join(FIXTURES, file), ZB_REPLAY_EXIT: String(exit) },
  });
}

test("the golden streams", () => {
  assert.equal(expected.protocol, 1);
  assert.equal(expected.streams.length, 6);
});

for (const s of expected.streams) {
  test(`golden stream ${s.file}`, async () => {
    const run = replay(s.file, s.zerobox_exit).run("true");
    if (s.error !== undefined) {
      const e = await run.catch((x: unknown) => x);
      assert.ok(e instanceof SetupFailedError);
      assert.ok(e instanceof SandboxError);
      assert.equal(e.kind, s.error.kind);
      assert.equal(e.message, s.error.message);
      assert.equal(e.exitCode, s.zerobox_exit);
      return;
    }
    const want = s.result!;
    const r = await run;
    assert.equal(r.events.length, s.events);
    assert.ok(r.events.every((e) => e.v === 1));
    assert.deepEqual([r.exitCode, r.signal, r.pid], [want.exit_code, want.signal, want.pid]);
    assert.deepEqual(r.session, want.session);
    assert.deepEqual([r.sessionId, r.sessionState, r.sessionChanges], want.session === null ? [null, null, null] : [want.session.id, want.session.state, want.session.changes]);
    const net = r.events
      .filter((e): e is NetEvent => e.event === "net")
      .map(({ host, port, action, reason }) => ({ host, port, action, reason }));
    assert.deepEqual(net, want.net);
  });
}
