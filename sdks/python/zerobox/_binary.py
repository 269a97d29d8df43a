import os
import shutil
import sysconfig
from typing import List, Optional

from .errors import BinaryNotFoundError


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _wheel_dirs() -> List[str]:
    """Where ``pip install zerobox`` puts the wheel's binary: the scripts directory of
    this interpreter's environment (a venv's bin), then of the user scheme
    (``--user``)."""
    dirs = []
    for scheme in (None, f"{os.name}_user"):
        try:
            d = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if d and d not in dirs:
            dirs.append(d)
    return dirs


def find_binary(binary: Optional[str] = None) -> str:
    """Return the zerobox executable: ``binary``, else ``$ZEROBOX_BIN``, else the one
    the ``zerobox`` wheel installed (the environment's scripts directory, then the user
    scheme's), else ``zerobox`` on ``PATH``. Raises BinaryNotFoundError (a SandboxError)
    naming what was tried."""
    tried: List[str] = []
    if binary is not None:
        if _is_executable(binary):
            return binary
        raise BinaryNotFoundError(f"zerobox binary not found or not executable: {binary}")
    env = os.environ.get("ZEROBOX_BIN")
    if env:
        if _is_executable(env):
            return env
        tried.append(f"$ZEROBOX_BIN={env}")
    else:
        tried.append("$ZEROBOX_BIN (unset)")
    for d in _wheel_dirs():
        candidate = os.path.join(d, "zerobox")
        if _is_executable(candidate):
            return candidate
        tried.append(candidate)
    found = shutil.which("zerobox")
    if found:
        return found
    tried.append("zerobox on PATH=" + os.environ.get("PATH", ""))
    raise BinaryNotFoundError("zerobox binary not found; tried: " + "; ".join(tried))
