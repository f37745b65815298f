"""One measurement at a time across every thread and worker process of this server.

Timings taken while another timing runs measure the contention, not attention; and two ladders at
once would take both cores from every other user. A `threading.Lock` covers one process only, so
`uvicorn --workers N` needs an OS file lock; the lock file's name is fixed, never from a request.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import Busy


def lock_path(name: str) -> Path:
    return Path(tempfile.gettempdir()) / f"attention-atlas-{os.getuid()}-{name}.lock"


@contextmanager
def exclusive(name: str, wait_s: float) -> Iterator[None]:
    # O_NOFOLLOW: a symlink planted at the path must not make us open someone else's file.
    fd = os.open(lock_path(name), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(
                        "another measurement is running on this server; try again in a few seconds"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
