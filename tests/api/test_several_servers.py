"""Several rooms: N stateless servers behind a reverse proxy (deploy/nginx.conf, README "Several rooms").

What scales: any server gives the same bytes for the same request, so a student can land on any of
them. What does not: each server keeps its own cache (a request cached on one is computed on another).
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.servers import ROOT, free_port, run_app, wait_until

CONF = ROOT / "deploy" / "nginx.conf"
REQUESTS = [
    ("/api/trace", {"prompt": "Lily had a red ball. She gave it to", "top_k": 20}),
    ("/api/head", {"prompt": "The cat sat on the mat", "layer": 1, "head": 3}),
    ("/api/cost", {"n": 4096}),
]


def raw(url: str, path: str, body: dict, encoding: str) -> bytes:
    with httpx.Client(base_url=url, timeout=60) as http:
        with http.stream("POST", path, json=body, headers={"accept-encoding": encoding}) as r:
            assert r.status_code == 200, r.read()
            return b"".join(r.iter_raw())


@pytest.mark.slow
def test_two_servers_answer_the_same_request_with_identical_bytes(tmp_path):
    args = ["--model", "classroom", "--host", "127.0.0.1"]
    with run_app(args, tmp_path / "a.log") as a, run_app(args, tmp_path / "b.log") as b:
        for path, body in REQUESTS:
            for encoding in ("identity", "gzip"):
                first, second = raw(a.url, path, body, encoding), raw(b.url, path, body, encoding)
                assert first == second, (path, encoding)


@pytest.mark.skipif(
    shutil.which("nginx") is None, reason="nginx is not installed (it is not needed to run the app)"
)
def test_the_shipped_nginx_config_is_valid(tmp_path):
    text = CONF.read_text()
    # Unprivileged ports, so the check needs no root; everything else exactly as shipped.
    conf = tmp_path / "nginx.conf"
    conf.write_text(re.sub(r"listen 80\b", "listen 18080", text))
    run = subprocess.run(
        ["nginx", "-t", "-p", str(tmp_path), "-c", str(conf),
         "-g", f"pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "test is successful" in run.stderr


def nginx_conf(tmp_path, listen: int, ports: list[int]) -> Path:
    """The shipped config with this test's ports (unprivileged, so no root is needed) and no access log."""
    text = re.sub(r"listen 80\b", f"listen {listen}", CONF.read_text())
    text = re.sub(r"server 127\.0\.0\.1:800\d[^;]*;\n", "", text)
    servers = "".join(f"        server 127.0.0.1:{p};\n" for p in ports)
    text = text.replace("        keepalive 32;", servers + "        keepalive 32;")
    text = text.replace("http {", "http {\n    access_log off;", 1)
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    return conf


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("nginx") is None, reason="nginx is not installed (it is not needed to run the app)"
)
def test_two_servers_behind_the_shipped_nginx_config_serve_a_student(tmp_path):
    args = ["--model", "classroom", "--host", "127.0.0.1"]
    with run_app(args, tmp_path / "a.log") as a, run_app(args, tmp_path / "b.log") as b:
        listen = free_port()
        conf = nginx_conf(tmp_path, listen, [a.port, b.port])
        cmd = ["nginx", "-p", str(tmp_path), "-c", str(conf),
               "-g", f"pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log; daemon off;"]  # fmt: skip
        proxy = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{listen}"
            wait_until(lambda: port_open(listen), lambda: proxy.poll() is None, "nginx")
            school = {"host": "atlas.school.lan"}
            page = httpx.get(url + "/", headers=school, timeout=30)
            assert page.status_code == 200 and "Attention Atlas" in page.text
            body = {"prompt": "Lily had a red ball. She gave it to", "top_k": 20}
            via = httpx.post(url + "/api/trace", json=body, headers=school, timeout=60)
            direct = httpx.post(a.url + "/api/trace", json=body, timeout=60)
            assert via.status_code == 200 and via.content == direct.content
            with pytest.raises(httpx.RemoteProtocolError):  # another name: closed without an answer
                httpx.get(url + "/", headers={"host": "evil.example"}, timeout=30)
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_nginx_config_matches_the_servers_limits():
    from app.serving import HEAD_LIMIT_BYTES
    from app.settings import Settings

    s, text = Settings(), CONF.read_text()
    assert f"client_header_timeout {s.request_timeout_s:.0f}s" in text
    assert f"client_body_timeout {s.request_timeout_s:.0f}s" in text
    assert f"client_max_body_size {s.max_request_bytes // 1024}k" in text
    assert f"large_client_header_buffers 4 {HEAD_LIMIT_BYTES // 1024}k" in text
    assert f"keepalive_timeout {s.keep_alive_s}s" in text
    assert f"send_timeout {s.send_stall_s:.0f}s" in text
    assert "proxy_set_header Host 127.0.0.1;" in text  # the servers' loopback Host check passes
