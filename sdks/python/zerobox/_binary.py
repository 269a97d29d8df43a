import os
import shutil
from typing import List, Optional

from .errors import BinaryNotFoundError


def find_binary(binary: Optional[str] = None) -> str:
    """Return the zerobox executable: ``binary``, else ``$ZEROBOX_BIN``, else
    ``zerobox`` on ``PATH``. Raises BinaryNotFoundError (a SandboxError) naming what
    was tried."""
    tried: List[str] = []
    if binary is not None:
        if os.path.isfile(binary) and os.access(binary, os.X_OK):
            return binary
        raise BinaryNotFoundError(f"zerobox binary not found or not executable: {binary}")
    env = os.environ.get("ZEROBOX_BIN")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        tried.append(f"$ZEROBOX_BIN={env}")
    else:
        tried.append("$ZEROBOX_BIN (unset)")
    found = shutil.which("zerobox")
    if found:
        return found
    tried.append("zerobox on PATH=" + os.environ.get("PATH", ""))
    raise BinaryNotFoundError("zerobox binary not found; tried: " + "; ".join(tried))
