"""List options against zerobox's list rule (comma-separated, ``\\,`` a literal comma,
any other backslash itself): every item of a deny list reaches zerobox as it was given,
whatever its name holds, checked by reading the files inside a real sandbox (set
ZEROBOX_BIN). Temporary directories live under /var/tmp: /tmp is scratch inside."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zerobox import Sandbox  # noqa: E402
from zerobox.sandbox import _list_flag  # noqa: E402

# Names zerobox's list rule treats specially, each followed in the list by another name:
# a trailing backslash used to take the comma after it and swallow the next item.
ODD_NAMES = ["trail\\", "comma,name", "two\\\\", "new\nline", "\\", "esc\\,comma", "back\\slash",
             ",lead", "end,\\"]

# Reads each file named on the command line, then the control file.
READ_ALL = 'for f do cat -- "$f" 2>/dev/null; done; cat -- "$0"'


class TestListFlags(unittest.TestCase):
    def test_trailing_backslash_ends_its_value(self) -> None:
        self.assertEqual(_list_flag("deny-read", ["/a\\", "/b", "/c,d"]),
                         ["--deny-read=/a\\", "--deny-read=/b,/c\\,d"])
        self.assertEqual(Sandbox(deny_read=["/x\\", "/y", "/z"]).args,
                         ["--deny-read=/x\\", "--deny-read=/y,/z"])
        self.assertEqual(Sandbox(secret_hosts={"K": ["a.test\\", "b.test"]}, secrets={"K": "v"}).args[-4:],
                         ["--secret-host", "K=a.test\\", "--secret-host", "K=b.test"])

    def test_empty_item(self) -> None:
        with self.assertRaises(ValueError):
            Sandbox(deny_read=["/a", ""])


class TestDenyListInSandbox(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="zerobox-sdk-lists-", dir="/var/tmp")
        self.home = os.path.join(self.tmp, "store")
        os.mkdir(self.home)
        self.paths = []
        for i, name in enumerate(ODD_NAMES):
            p = os.path.join(self.tmp, name)
            with open(p, "w") as f:
                f.write(f"zb-denied-{i}\n")
            self.paths.append(p)
        self.control = os.path.join(self.tmp, "control")
        with open(self.control, "w") as f:
            f.write("zb-control\n")

    def tearDown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_reads(self, **kw) -> str:
        sb = Sandbox(host_env={"ZEROBOX_HOME": self.home}, **kw)
        r = sb.run("sh", ["-c", READ_ALL, self.control, *self.paths])
        self.assertEqual(r.exit_code, 0, r.stderr)
        return r.text()

    def test_every_odd_name_is_denied(self) -> None:
        # Without the list, every file is readable (so the check below can fail).
        seen = self.run_reads()
        for i in range(len(ODD_NAMES)):
            self.assertIn(f"zb-denied-{i}\n", seen)
        seen = self.run_reads(deny_read=self.paths)
        self.assertIn("zb-control\n", seen)
        for i, name in enumerate(ODD_NAMES):
            self.assertNotIn(f"zb-denied-{i}", seen, f"{name!r} was readable")


if __name__ == "__main__":
    unittest.main()
