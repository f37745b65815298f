"""One measurement at a time across every thread and worker process of this server, refused at once.

Timings taken while another timing runs measure the contention, not attention; and two ladders at
once would take both cores from every other user. A `threading.Lock` covers one process only, so
`uvicorn --workers N` needs an OS file lock. It is never waited for: a request that finds it taken
gets Busy (503) at once, with the seconds the running measurement may still take, which its holder
wrote into the file. A shared thread sleeping in a loop for the lock froze every page under 150
timing requests (issue 15).

The file lives in a private folder (mode 0700, ours, not a symlink: `private_dir`) and is named after
this server (`server_pid`: the `python -m app` process, which the `--workers` processes share), never
after a request: another user cannot plant a symlink there, and two servers on one machine do not
refuse each other's measurements.
"""

from __future__ import annotations

import fcntl
import logging
import multiprocessing
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from .errors import Busy

log = logging.getLogger("uvicorn.error")


def server_pid() -> int:
    """The server's process: uvicorn's supervisor for `--workers N` (it spawns the workers with
    multiprocessing), else this process."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getpid()


def _is_private(path: Path) -> bool:
    st = os.lstat(path)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


@lru_cache
def private_dir() -> Path:
    """$XDG_RUNTIME_DIR/attention-atlas, or <tmp>/attention-atlas-<uid>: made 0700 by us and checked
    to be our own real folder; if someone else made it, a fresh private folder for this process."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "attention-atlas" if runtime and Path(runtime).is_dir() else None
    path = base or Path(tempfile.gettempdir()) / f"attention-atlas-{os.getuid()}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return Path(tempfile.mkdtemp(prefix="attention-atlas-"))
    if not _is_private(path):
        log.warning("%s is not a private folder of ours; timing locks go to a folder of this process", path)
        return Path(tempfile.mkdtemp(prefix="attention-atlas-"))
    return path


def lock_path(name: str, pid: int | None = None) -> Path:
    return private_dir() / f"{name}-{pid or server_pid()}.lock"


@contextmanager
def exclusive(name: str, hold_s: float, pid: int | None = None) -> Iterator[None]:
    """Hold the server's lock `name` (expected for at most `hold_s`) or raise Busy at once."""
    # O_NOFOLLOW: even in our own folder, never follow a symlink to someone else's file.
    fd = os.open(lock_path(name, pid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            wait = _remaining(fd)
            raise Busy(
                f"The server is busy: another measurement is running; try again in {wait} s.",
                retry_after=wait,
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{time.time() + hold_s:.3f}".encode(), 0)  # when we expect to be done
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _remaining(fd: int) -> int:
    """Seconds the holder said it may still take (at least 1; 5 if it wrote nothing readable)."""
    try:
        until = float(os.pread(fd, 32, 0) or b"nan")
    except ValueError:
        return 5
    left = until - time.time()
    return max(1, int(left) + 1) if left == left else 5
