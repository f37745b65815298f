"""`python -m app`: flags, checks before start, the loud warning off loopback, and real worker processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import httpx
import pytest

import app.__main__ as cli
from tests.api_helpers import save_tiny
from tests.servers import ROOT, free_port, run_app, wait_until


def test_cli_defaults_and_repeatable_model():
    args = cli.parse_args([])
    assert (args.models, args.host, args.port, args.device, args.workers) == (
        ["classroom", "classroom-gpt2", "classroom-nope"],
        "127.0.0.1",
        8000,
        "cpu",
        1,
    )
    args = cli.parse_args(["--model", "a", "--model", "b", "--port", "9000", "--workers", "3"])
    assert (args.models, args.port, args.workers) == (["a", "b"], 9000, 3)
    for bad in (["--port", "0"], ["--workers", "0"], ["--device", "tpu"], ["--port", "x"]):
        with pytest.raises(SystemExit):
            cli.parse_args(bad)


def test_cli_loopback_detection():
    assert cli.is_loopback("127.0.0.1") and cli.is_loopback("localhost") and cli.is_loopback("::1")
    assert (
        not cli.is_loopback("0.0.0.0")
        and not cli.is_loopback("192.168.1.5")
        and not cli.is_loopback("myhost")
    )


def test_cli_refuses_a_missing_model_before_starting(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "serve", lambda *a, **k: pytest.fail("must not start"))
    with pytest.raises(SystemExit) as exc:
        cli.main(["--model", str(tmp_path / "nowhere")])
    assert "neither a bundled model" in str(exc.value.code)


def fake_serve(seen: dict):
    """Records what cli.main would serve, and says "ready" as a started server would."""

    def serve(target, settings, host, port, workers, ready):
        seen.update(target=target, settings=settings, host=host, port=port, workers=workers)
        ready()

    return serve


ENV = ("ATLAS_MODELS", "ATLAS_DEVICE", "ATLAS_DTYPE", "ATLAS_HOST", "ATLAS_TORCH_THREADS")


def test_cli_passes_settings_to_workers_and_warns_off_loopback(tmp_path, monkeypatch, capsys):
    folder = save_tiny(tmp_path / "tiny")
    seen = {}
    monkeypatch.setattr(cli, "serve", fake_serve(seen))
    for name in ENV:
        monkeypatch.setenv(name, "")  # recorded, so what cli.main sets is undone after the test
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    cli.main(["--model", "tiny", "--host", "0.0.0.0", "--port", "8123", "--workers", "2"])
    assert (seen["target"], seen["host"], seen["port"], seen["workers"]) == (
        "app.main:create_app",
        "0.0.0.0",
        8123,
        2,
    )
    assert json.loads(os.environ["ATLAS_MODELS"]) == [str(folder)]  # absolute, as every worker must see it
    assert seen["settings"].models == [str(folder)] and seen["settings"].host == "0.0.0.0"
    out = capsys.readouterr()
    assert "WARNING" in out.err and "0.0.0.0:8123" in out.err
    assert "ready: open http://127.0.0.1:8123 (other machines: http://" in out.out
    cli.main(["--model", "tiny"])
    assert "WARNING" not in capsys.readouterr().err


def test_cli_a_bad_setting_in_the_environment_is_one_sentence(tmp_path, monkeypatch):
    folder = save_tiny(tmp_path / "tiny")
    monkeypatch.setattr(cli, "serve", lambda *a, **k: pytest.fail("must not start"))
    for name in ENV:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("ATLAS_REQUEST_TIMEOUT_S", "soon")
    with pytest.raises(SystemExit) as stop:
        cli.main(["--model", str(folder)])
    reason = str(stop.value.code)
    assert reason.startswith("Cannot start: ") and "ATLAS_REQUEST_TIMEOUT_S" in reason and "\n" not in reason


@pytest.mark.slow
def test_cli_serves_with_two_worker_processes(tmp_path):
    folder = save_tiny(tmp_path / "tiny")
    args = ["--model", str(folder), "--workers", "2"]
    with run_app(args, tmp_path / "server.log", stop=signal.SIGINT) as server:
        bodies = {
            httpx.post(f"{server.url}/api/trace", json={"prompt": "The cat sat"}).content for _ in range(6)
        }
        assert len(bodies) == 1  # whichever worker answered, the bytes are the same
        # The supervisor says "ready" after it has heard from every worker, which can come a moment after a
        # worker's first answer: wait for the line as a user would, instead of stopping the server first.
        wait_until(
            lambda: "is ready" in server.output(), lambda: server.proc.poll() is None, "the ready line"
        )
    out = server.output()
    assert f"Attention Atlas is ready: open {server.url}" in out
    assert out.count("Attention Atlas is ready") == 1  # once, when both workers serve
    assert out.index("Attention Atlas is ready") > out.rindex("Application startup complete")


def broken(folder, how: str):
    if how == "truncated weights":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:500])
    elif how == "missing tokenizer":
        (folder / "tokenizer.json").unlink()
    elif how == "binary config":
        (folder / "config.json").write_bytes(b"\xff\xfe\x00binary")
    elif how == "n_layer four":
        cfg = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, "n_layer": "four"}))
    elif how == "huge vocabulary":
        cfg = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, "vocab_size": 10**13}))
    return folder


BROKEN = ["truncated weights", "missing tokenizer", "binary config", "n_layer four", "huge vocabulary"]


@pytest.mark.parametrize("how", BROKEN)
def test_cli_broken_model_stops_before_any_worker_with_one_sentence(tmp_path, monkeypatch, capsys, how):
    folder = broken(save_tiny(tmp_path / "tiny"), how)
    monkeypatch.setattr(cli, "serve", lambda *a, **k: pytest.fail("must not start"))
    for name in ENV:
        monkeypatch.setenv(name, "")  # recorded, so what cli.main sets is undone after the test
        monkeypatch.delenv(name)
    with pytest.raises(SystemExit) as stop:
        cli.main(["--model", str(folder), "--workers", "2", "--port", str(free_port())])
    reason = str(stop.value.code)  # what Python prints last, with exit status 1
    assert reason.startswith("Cannot start: ") and str(folder) in reason and "\n" not in reason
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.slow
def test_cli_broken_model_exits_non_zero_for_two_workers_in_a_real_process(tmp_path):
    folder = broken(save_tiny(tmp_path / "tiny"), "truncated weights")
    cmd = [sys.executable, "-m", "app", "--model", str(folder), "--workers", "2", "--port", str(free_port())]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Cannot start: ") and str(folder) in last, done.stderr
    assert "Traceback" not in done.stderr and "ready" not in done.stdout
    debug = subprocess.run([*cmd, "--debug"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert debug.returncode != 0 and "Traceback" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == last


@pytest.mark.parametrize("workers", [1, 2])
def test_cli_busy_port_exits_non_zero_with_one_sentence(tmp_path, workers):
    folder = save_tiny(tmp_path / "tiny")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_")}
        cmd = [
            sys.executable,
            "-m",
            "app",
            "--model",
            str(folder),
            "--workers",
            str(workers),
            "--port",
            str(port),
        ]
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith(f"Cannot start: cannot listen on 127.0.0.1:{port}")
    assert "ready" not in done.stdout


def test_cli_any_address_prints_usable_urls(monkeypatch):
    monkeypatch.setattr(cli, "lan_address", lambda: "192.168.1.5")
    for host in ("0", "0.0.0.0", "::"):
        assert cli.urls(host, 8000) == ["http://127.0.0.1:8000", "http://192.168.1.5:8000"]
    assert cli.urls("::1", 8000) == ["http://[::1]:8000"]
    assert cli.urls("127.0.0.1", 8000) == ["http://127.0.0.1:8000"]


def test_cli_one_worker_serves_the_models_it_checked_without_loading_them_again(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    import app.runtime

    folder = save_tiny(tmp_path / "tiny")
    loads = []
    real_load = cli.load

    def counting_load(spec, **kw):
        loads.append(spec)
        return real_load(spec, **kw)

    served = {}
    monkeypatch.setattr(cli, "load", counting_load)
    monkeypatch.setattr(app.runtime, "load", counting_load)
    monkeypatch.setattr(cli, "serve", fake_serve(served))
    for name in ENV:
        monkeypatch.setenv(name, "")  # recorded, so what cli.main sets is undone after the test
        monkeypatch.delenv(name)
    cli.main(["--model", str(folder), "--port", "8124"])
    with TestClient(served["target"], base_url="http://127.0.0.1:8124") as client:  # runs the lifespan
        assert client.get("/api/models").json()["default"] == "tiny"
    assert loads == [str(folder)]  # checked once, then served: not loaded a second time


def test_cli_export_writes_one_offline_file(tmp_path, capsys):
    folder = tmp_path / "tiny"
    save_tiny(folder)
    out = tmp_path / "lesson.html"
    cli.main(["export", "The cat sat on the mat", "--model", str(folder), "-o", str(out)])
    assert "no server needed" in capsys.readouterr().out and 'id="head-grid"' in out.read_text()
    with pytest.raises(SystemExit, match="Cannot export: the prompt has no tokens"):
        cli.main(["export", "", "--model", str(folder), "-o", str(tmp_path / "empty.html")])


def test_serve_one_worker_on_a_taken_port_never_says_ready(tmp_path):
    """The port taken between the start-up check and uvicorn's bind: no "ready", and the reason."""
    from app.main import create_app
    from app.serving import serve
    from app.settings import Settings

    settings = Settings(models=[str(save_tiny(tmp_path / "tiny"))])
    said = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        problem = serve(create_app(settings), settings, "127.0.0.1", port, 1, lambda: said.append("ready"))
    assert said == [] and problem.startswith(f"cannot listen on 127.0.0.1:{port}")


@pytest.mark.slow
def test_serve_two_workers_when_a_worker_fails_at_start_reports_it_and_never_says_ready():
    from app.serving import serve
    from app.settings import Settings

    said = []
    # A worker that cannot build the app, after every check of the parent passed.
    problem = serve(
        "app.main:no_such_factory", Settings(), "127.0.0.1", free_port(), 2, lambda: said.append(1)
    )
    assert said == [] and problem.startswith("a worker process failed while starting")
