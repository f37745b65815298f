"""The timing lock (app/exclusive.py): refused at once, in a private per-user folder, shared by the
worker processes of one server and by no other server."""

from __future__ import annotations

import multiprocessing
import os
import stat
import time

import pytest

from app import exclusive as ex
from app.errors import Busy


@pytest.fixture
def tmp_home(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(ex.tempfile, "gettempdir", lambda: str(tmp_path))
    ex.private_dir.cache_clear()
    yield tmp_path
    ex.private_dir.cache_clear()


def test_the_lock_is_refused_at_once_with_the_holders_remaining_time(tmp_home):
    with ex.exclusive("timing", hold_s=9):
        start = time.monotonic()
        with pytest.raises(Busy, match=r"another measurement is running; try again in (9|10) s") as busy:
            with ex.exclusive("timing", hold_s=9):
                pass
        assert time.monotonic() - start < 0.5 and busy.value.retry_after in (9, 10)
    with ex.exclusive("timing", hold_s=1):  # free again once released
        pass


def test_the_lock_lives_in_a_private_folder_named_after_the_server(tmp_home):
    path = ex.lock_path("timing")
    assert path.parent == tmp_home / f"attention-atlas-{os.getuid()}"
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700 and path.name == f"timing-{os.getpid()}.lock"
    assert ex.lock_path("timing", pid=1) != path  # another server: another lock


def test_a_folder_planted_by_someone_else_is_not_used(tmp_home):
    planted = tmp_home / f"attention-atlas-{os.getuid()}"
    target = tmp_home / "elsewhere"
    target.mkdir(mode=0o777)
    os.chmod(target, 0o777)
    planted.symlink_to(target)  # a symlink at the folder's name: never followed
    path = ex.lock_path("timing")
    assert path.parent != planted and not str(path).startswith(str(target))
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    with ex.exclusive("timing", hold_s=1):
        pass
    assert list(target.iterdir()) == []


def _try_in_worker(queue) -> None:
    try:
        with ex.exclusive("timing", hold_s=1):
            queue.put("got it")
    except Busy:
        queue.put("busy")


def test_worker_processes_of_one_server_share_the_lock():
    """uvicorn --workers spawns its workers with multiprocessing: a worker's server is its parent."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    with ex.exclusive("timing", hold_s=30):
        worker = ctx.Process(target=_try_in_worker, args=(queue,))
        worker.start()
        answer = queue.get(timeout=60)
        worker.join(60)
    assert answer == "busy"
