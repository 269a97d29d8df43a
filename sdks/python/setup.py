"""The wheel with the zerobox binary inside (scripts/sdk-packages.sh wheel).

pyproject.toml holds the metadata. This file only matters when the build tree has the
binary at _bin/zerobox, as scripts/sdk-packages.sh stages it: the binary then installs as
``bin/zerobox`` of the environment (the venv's bin, or ~/.local/bin for ``--user``),
and the wheel is tagged for the machine's architecture instead of "any". zerobox is a
static executable (no shared libraries, Linux 3.2 or later), so the wheel claims both
manylinux (glibc) and musllinux. Without _bin/zerobox (a checkout), the build is the
SDK alone, a pure-Python wheel that finds zerobox on PATH.
"""
import os
import platform

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.path.join("_bin", "zerobox")

kwargs = {}
if os.path.isfile(os.path.join(HERE, BINARY)):
    try:
        from setuptools.command.bdist_wheel import bdist_wheel  # setuptools 70.1 and later
    except ImportError:
        from wheel.bdist_wheel import bdist_wheel  # Debian 12's setuptools 66, with python3-wheel

    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine())
    plat = f"manylinux_2_17_{machine}.musllinux_1_1_{machine}"

    class BinaryWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return "py3", "none", plat

    kwargs = {"data_files": [("bin", [BINARY])], "cmdclass": {"bdist_wheel": BinaryWheel}}

setup(**kwargs)
