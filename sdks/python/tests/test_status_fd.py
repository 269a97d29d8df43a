"""The golden --status-fd streams of tests/fixtures/status-fd, decoded as a run would
decode them, against the values of expected.json there (the C++, TypeScript and Rust
tests check the same streams against the same values). No zerobox needed."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import zerobox  # noqa: E402
from zerobox.records import Session, SessionRecord  # noqa: E402
from zerobox.sandbox import _build_result, _EventLog  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "..", "tests", "fixtures", "status-fd")


def _expected():
    with open(os.path.join(FIXTURES, "expected.json"), encoding="utf-8") as f:
        return json.load(f)


def _decode(data: bytes, chunk: int, zerobox_exit: int):
    log = _EventLog()
    for i in range(0, len(data), chunk):
        log.feed(data[i:i + chunk])
    log.close()
    return log.events, _build_result(zerobox_exit, log.events, b"", b"")


class TestGoldenStreams(unittest.TestCase):
    def test_every_stream(self) -> None:
        exp = _expected()
        self.assertEqual(exp["protocol"], 1)
        self.assertEqual(len(exp["streams"]), 6)
        for s in exp["streams"]:
            with open(os.path.join(FIXTURES, s["file"]), "rb") as f:
                data = f.read()
            for chunk in (len(data), 1, 7):  # the decoding must not depend on the chunking
                with self.subTest(file=s["file"], chunk=chunk):
                    if "error" in s:
                        with self.assertRaises(zerobox.SandboxError) as cm:
                            _decode(data, chunk, s["zerobox_exit"])
                        self.assertEqual(cm.exception.kind, s["error"]["kind"])
                        self.assertIsInstance(cm.exception, zerobox.SetupFailedError)
                        self.assertEqual(cm.exception.message, s["error"]["message"])
                        self.assertEqual(cm.exception.exit_code, s["zerobox_exit"])
                        continue
                    events, r = _decode(data, chunk, s["zerobox_exit"])
                    want = s["result"]
                    self.assertEqual(len(events), s["events"])
                    self.assertTrue(all(e["v"] == 1 for e in events))
                    self.assertEqual((r.exit_code, r.signal, r.pid),
                                     (want["exit_code"], want["signal"], want["pid"]))
                    if want["session"] is None:
                        self.assertIsNone(r.session)
                        self.assertIsNone(r.session_id)
                    else:
                        ws = want["session"]
                        self.assertEqual(r.session, Session(ws["id"], ws["state"], ws["changes"]))
                        self.assertEqual((r.session_id, r.session_state, r.session_changes),
                                         (ws["id"], ws["state"], ws["changes"]))
                    net = [{k: e[k] for k in ("host", "port", "action", "reason")}
                           for e in r.events if e["event"] == "net"]
                    self.assertEqual(net, want["net"])

    def test_every_stream_through_run(self) -> None:
        # replay.sh stands in for zerobox: the stream arrives through the real status pipe
        for s in _expected()["streams"]:
            with self.subTest(file=s["file"]):
                sb = zerobox.Sandbox(binary=os.path.join(FIXTURES, "replay.sh"), host_env={
                    "ZB_REPLAY_STREAM": os.path.join(FIXTURES, s["file"]),
                    "ZB_REPLAY_EXIT": str(s["zerobox_exit"])})
                if "error" in s:
                    with self.assertRaises(zerobox.SetupFailedError) as cm:
                        sb.run("true")
                    self.assertEqual((cm.exception.kind, cm.exception.message),
                                     (s["error"]["kind"], s["error"]["message"]))
                    continue
                r = sb.run("true")
                want = s["result"]
                self.assertEqual((r.exit_code, r.signal, r.pid, len(r.events)),
                                 (want["exit_code"], want["signal"], want["pid"], s["events"]))
                ws = want["session"]
                self.assertEqual(r.session, None if ws is None else Session(**ws))


class TestDecoding(unittest.TestCase):
    def test_protocol_errors(self) -> None:
        with self.assertRaises(zerobox.ProtocolError) as cm:
            _build_result(0, [{"v": 1, "event": "child_exit"}], b"", b"")
        self.assertEqual(cm.exception.kind, "protocol")
        with self.assertRaises(zerobox.ProtocolError):
            _build_result(0, [{"v": 1, "event": "child_exit", "code": 0},
                              {"v": 1, "event": "session", "id": 5}], b"", b"")

    def test_cancelled_and_setup_failed(self) -> None:
        with self.assertRaises(zerobox.SandboxCancelled) as cm:
            _build_result(-9, [{"v": 1, "event": "child_started", "pid": 3}], b"", b"", cancelled=True)
        self.assertEqual(cm.exception.kind, "cancelled")
        self.assertIn("signal 9", str(cm.exception))
        with self.assertRaises(zerobox.SetupFailedError) as cm2:
            _build_result(2, [], b"zerobox: error: bad flag\n", b"")
        self.assertEqual(cm2.exception.kind, "setup_failed")

    def test_result_spellings_agree(self) -> None:
        r = zerobox.Result(exit_code=0, signal=None, stdout=b"", stderr=b"",
                           session=Session("ab", "pending", 2))
        self.assertEqual((r.session_id, r.session_state, r.session_changes), ("ab", "pending", 2))
        old = zerobox.Result(0, None, b"", b"", session_id="ab", session_state="pending",
                             session_changes=2)
        self.assertEqual(old.session, Session("ab", "pending", 2))

    def test_kinds(self) -> None:
        self.assertEqual(
            [c.kind for c in (zerobox.BinaryNotFoundError, zerobox.SetupFailedError,
                              zerobox.SnapshotFailedError, zerobox.SandboxTimeout,
                              zerobox.SandboxCancelled, zerobox.ProtocolError)],
            ["binary_not_found", "setup_failed", "snapshot_failed", "timeout", "cancelled",
             "protocol"])
        self.assertIsInstance(zerobox.SandboxTimeout("t"), TimeoutError)

    def test_session_record(self) -> None:
        obj = {"id": "f6ea", "state": "pending", "mode": "review", "kind": "run",
               "parent": None, "changes": 2, "changes_by_kind": {"added": 2, "deleted": 0},
               "command": ["sh", "-c", "x"], "cwd": "/w", "tracked": ["/w"], "exclude": [],
               "exit_code": 0, "signal": None, "created_at": "2026-12-02T05:09:14Z",
               "finished_at": "2026-12-02T05:09:14Z", "applied_at": None, "new_field": 1}
        rec = SessionRecord.from_json(obj)
        self.assertEqual((rec.id, rec.state, rec.mode, rec.changes, rec.exit_code, rec.cwd),
                         ("f6ea", "pending", "review", 2, 0, "/w"))
        self.assertEqual(rec.changes_by_kind["added"], 2)
        self.assertEqual(rec["state"], "pending")  # still reads as the JSON object
        self.assertEqual(rec.get("new_field"), 1)
        self.assertEqual(rec.to_dict(), obj)
        with self.assertRaises(zerobox.ProtocolError):
            SessionRecord.from_json({"state": "pending"})


class TestStrict(unittest.TestCase):
    def test_flag(self) -> None:
        self.assertIn("--strict-sandbox", zerobox.Sandbox(strict=True).args)
        self.assertNotIn("--strict-sandbox", zerobox.Sandbox().args)


if __name__ == "__main__":
    unittest.main()
