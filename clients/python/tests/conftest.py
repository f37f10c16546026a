"""
Fixtures for the client's tests, which run against a real service: WRS_BASE_URL, WRS_API_KEY and
WRS_WEBHOOK_SECRET (the account's `whsec_`) come from the environment (test/clients/python.test.ts
starts the service, with a fake model provider, and runs pytest). The workflows are published here.
"""
from __future__ import annotations

import os
import socket
import threading
from typing import Iterator, List

import httpx
import pytest

from wrs_client import WrsClient


def _batch(slug: str, rows: List[str], llm: bool) -> dict:
    """rows → (a model call or a text node) per row → one result."""
    step = {"id": "step", "type": "llm", "model": "gpt-test", "prompt": "{{row}}"} if llm else {"id": "step", "type": "text", "template": "line {{row}}"}
    return {
        "slug": slug,
        "nodes": [
            {"id": "rows", "type": "batch", "rows": rows},
            step,
            {"id": "out", "type": "user_result", "label": "Answers"},
        ],
        "edges": [{"from": "rows", "to": "step", "port": "row"}, {"from": "step", "to": "out"}],
    }


GREET = {
    "slug": "py-greet",
    "nodes": [
        {"id": "name", "type": "user_input", "label": "Name", "input_type": "text"},
        {"id": "greet", "type": "text", "template": "Hello, {{name}}!"},
        {"id": "greeting", "type": "user_result", "label": "Greeting"},
    ],
    "edges": [{"from": "name", "to": "greet", "port": "name"}, {"from": "greet", "to": "greeting"}],
}


@pytest.fixture(scope="session")
def base_url() -> str:
    return os.environ["WRS_BASE_URL"]


@pytest.fixture(scope="session")
def api_key() -> str:
    return os.environ["WRS_API_KEY"]


@pytest.fixture(scope="session")
def workflows(base_url: str, api_key: str) -> dict:
    """Publishes the test workflows once; returns their slugs."""
    docs = {
        "greet": GREET,
        # Four slow model calls: a stream of this run lasts long enough to be cut in the middle.
        "slow": _batch("py-slow", [f"slow:{ms} row {i}" for i, ms in enumerate([400, 800, 1200, 1600])], llm=True),
        "lines": _batch("py-lines", [str(i) for i in range(7)], llm=False),
    }
    for doc in docs.values():
        res = httpx.post(f"{base_url}/api/v1/workflows", json=doc, headers={"authorization": f"Bearer {api_key}"}, timeout=30)
        assert res.status_code == 201, res.text
    return {name: doc["slug"] for name, doc in docs.items()}


@pytest.fixture()
def client(base_url: str, api_key: str) -> Iterator[WrsClient]:
    with WrsClient(base_url, api_key) as c:
        yield c


class CuttingProxy:
    """A TCP pass-through to the service that can cut every open connection, as a flaky network would."""

    def __init__(self, target: str) -> None:
        url = httpx.URL(target)
        self._upstream = (url.host, url.port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._open: List[socket.socket] = []
        self._lock = threading.Lock()
        self.starts = 0  # POST /api/v1/responses seen on the way
        self.resumes = 0  # GET .../stream seen on the way
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._upstream)
            with self._lock:
                self._open += [downstream, upstream]
            threading.Thread(target=self._pump, args=(downstream, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, downstream, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, requests: bool) -> None:
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                if requests:
                    self.starts += chunk.count(b"POST /api/v1/responses ")
                    self.resumes += chunk.count(b"/stream HTTP/1.1")
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self._lock:
            sockets, self._open = self._open, []
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self) -> None:
        self._server.close()
        self.cut()


@pytest.fixture()
def proxy(base_url: str) -> Iterator[CuttingProxy]:
    p = CuttingProxy(base_url)
    yield p
    p.close()
