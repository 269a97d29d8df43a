"""CTest's run of the Python SDK's tests (registered by ../ctest.cmake): unittest's
discovery in tests/, against $ZEROBOX_BIN.

Exits 0 when every test passed; 1 when one failed or errored, or none was found; 77,
CTest's SKIP_RETURN_CODE, when this Python is older than pyproject.toml's
requires-python, or when none failed and some were skipped: CTest sees the suite as
one test, and a skipped test must not count as a passed one (scripts/test.sh fails
on skips)."""
import os
import sys
import unittest

SKIPPED = 77
MIN_PYTHON = (3, 9)  # pyproject.toml: requires-python


def main() -> int:
    if sys.version_info < MIN_PYTHON:
        print("skipped: Python %s is older than %d.%d" % ((sys.version.split()[0],) + MIN_PYTHON),
              file=sys.stderr)
        return SKIPPED
    sdk = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    suite = unittest.defaultTestLoader.discover(os.path.join(sdk, "tests"), top_level_dir=sdk)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0:
        print("no tests were found in %s/tests" % sdk, file=sys.stderr)
        return 1
    if result.skipped:
        print("skipped: %d of %d test(s):" % (len(result.skipped), result.testsRun), file=sys.stderr)
        for test, why in result.skipped:
            print("  %s: %s" % (test.id(), why), file=sys.stderr)
        return SKIPPED
    return 0


if __name__ == "__main__":
    sys.exit(main())
