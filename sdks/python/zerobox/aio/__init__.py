"""The asyncio API: the same policy, results and errors as the blocking API.

    from zerobox.aio import AsyncSandbox, snapshots
    r = await AsyncSandbox(allow_write=["/var/tmp/out"]).run("sh", ["-c", "echo hi"])
    d = await snapshots.diff(r.session_id)      # for a run with snapshot="review"
"""
from .sandbox import AsyncProcess, AsyncSandbox
from . import snapshots

__all__ = ["AsyncSandbox", "AsyncProcess", "snapshots"]
