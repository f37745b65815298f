"""`python -m app`: flags, checks before start, the loud warning off loopback, and real worker processes."""

from __future__ import annotations

import json
import os
import signal

import httpx
import pytest

import app.__main__ as cli
from tests.api_helpers import save_tiny
from tests.servers import run_app


def test_cli_defaults_and_repeatable_model():
    args = cli.parse_args([])
    assert (args.models, args.host, args.port, args.device, args.workers) == (
        ["classroom"],
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
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("must not start"))
    with pytest.raises(SystemExit) as exc:
        cli.main(["--model", str(tmp_path / "nowhere")])
    assert "neither a bundled model" in str(exc.value.code)


def test_cli_passes_settings_to_workers_and_warns_off_loopback(tmp_path, monkeypatch, capsys):
    folder = save_tiny(tmp_path / "tiny")
    seen = {}
    monkeypatch.setattr("uvicorn.run", lambda target, **kw: seen.update(target=target, **kw))
    for name in ("ATLAS_MODELS", "ATLAS_DEVICE", "ATLAS_URL", "ATLAS_TORCH_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    cli.main(["--model", "tiny", "--host", "0.0.0.0", "--port", "8123", "--workers", "2"])
    assert seen == {
        "target": "app.main:create_app",
        "factory": True,
        "host": "0.0.0.0",
        "port": 8123,
        "workers": 2,
    }
    assert json.loads(os.environ["ATLAS_MODELS"]) == [str(folder)]  # absolute, as every worker must see it
    assert os.environ["ATLAS_URL"] == "http://127.0.0.1:8123"
    out = capsys.readouterr()
    assert "WARNING" in out.err and "0.0.0.0:8123" in out.err
    assert "http://127.0.0.1:8123" in out.out
    cli.main(["--model", "tiny"])
    assert "WARNING" not in capsys.readouterr().err


@pytest.mark.slow
def test_cli_serves_with_two_worker_processes(tmp_path):
    folder = save_tiny(tmp_path / "tiny")
    args = ["--model", str(folder), "--workers", "2"]
    with run_app(args, tmp_path / "server.log", stop=signal.SIGINT) as server:
        bodies = {
            httpx.post(f"{server.url}/api/trace", json={"prompt": "The cat sat"}).content for _ in range(6)
        }
        assert len(bodies) == 1  # whichever worker answered, the bytes are the same
    out = server.output()
    assert f"Attention Atlas is ready: open {server.url}" in out
    assert out.count("Attention Atlas is ready") == 2  # one line per worker
