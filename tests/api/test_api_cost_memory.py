"""POST /api/cost/memory: peak memory measured on this server, within the timing limits and lock."""

from __future__ import annotations

import os

import pytest

from app.cost.schemas import MemoryResponse
from app.cost.text import human_bytes
from app.exclusive import exclusive
from labs.cost import timing_bytes
from model import load
from tests.api_helpers import client_for, save_tiny

pytestmark = pytest.mark.skipif(
    not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's peak-RSS reset"
)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def client(tiny_folder):
    with client_for(tiny_folder, max_cost_n=1024) as c:  # the response cache on: memory is measured once
        yield c


def test_memory_numbers_come_from_the_server(client, tiny_folder):
    r = client.post("/api/cost/memory", json={"max_n": 1024})
    assert r.status_code == 200, r.text
    data = MemoryResponse.model_validate(r.json())
    cfg = load(tiny_folder).config
    assert data.ns == [64, 128, 256, 512, 1024] and data.device == "cpu" and "VmHWM" in data.method
    assert data.predicted == [timing_bytes(cfg, n) for n in data.ns]
    assert data.explicit[-1] / data.explicit[-2] > 3.2  # n²
    assert data.fused[-1] < data.predicted[-1] / 4  # no n x n matrix kept
    assert data.fits["explicit"].exponent > data.fits["fused"].exponent + 0.5
    assert human_bytes(data.explicit[-1]) in data.sentence
    again = client.post("/api/cost/memory", json={"max_n": 1000}).json()  # the ladder 64 .. 512
    assert again["ns"][-1] == 512
    twice = client.post("/api/cost/memory", json={"max_n": 512}).json()
    assert twice == again  # measured once: a peak does not depend on the server's load


def test_memory_respects_the_timing_limits(tiny_folder):
    with client_for(tiny_folder, cache_bytes=0, max_cost_n=4096, max_timing_bytes=2**20) as c:
        r = c.post("/api/cost/memory", json={"max_n": 512})
        assert r.status_code == 422 and "limits.max_timing_bytes" in r.json()["detail"]
        assert c.post("/api/cost/memory", json={"max_n": 8192}).status_code == 422
        assert c.post("/api/cost/memory", json={"max_n": 64}).status_code == 422  # one size: no exponent


def test_memory_waits_for_no_other_measurement(client):
    with exclusive("timing", hold_s=7):  # the test client's app runs here: its lock is ours
        r = client.post("/api/cost/memory", json={"max_n": 128})
    assert r.status_code == 503 and "another measurement" in r.json()["detail"]
    assert int(r.headers["retry-after"]) >= 1


def test_memory_failures_are_sentences(client, monkeypatch):
    import app.cost.handler as handler
    from labs.memory import MeasurementFailed

    def fail(*_):
        raise MeasurementFailed("the memory measurement took more than 120 s")

    monkeypatch.setattr(handler, "peak_memory", fail)
    r = client.post("/api/cost/memory", json={"max_n": 256})  # not measured before: not in the cache
    assert r.status_code == 503 and r.json()["detail"].startswith(
        "The memory measurement took more than 120 s."
    )
    monkeypatch.setattr(handler, "unsupported", lambda device: "measuring peak memory on CPU needs Linux")
    r = client.post("/api/cost/memory", json={"max_n": 256})
    assert r.status_code == 422 and r.json()["detail"] == "Measuring peak memory on CPU needs Linux."
