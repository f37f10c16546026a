"""
The client against small misbehaving servers on 127.0.0.1 (no service needed): what a proxy, a load
balancer, an API restart or an unusual body does to it. Each server answers request number n with
`handler(h, n)`, where `h` is the http.server handler with a few helpers (`sse`, `chunk`, `end`, `cut`, `json`).
"""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional

import httpx
import pytest

from wrs_client import APIConnectionError, AsyncWrsClient, AuthenticationError, NotFoundError, RateLimitError, ServiceUnavailableError, StreamError, WrsClient

CREATED = {"type": "response.created", "sequence_number": 0, "response": {"run_id": "run_1", "id": "run_1", "status": "pending"}}


def ev(seq: int, kind: str = "response.output_text.delta", **extra: Any) -> Dict[str, Any]:
    return {"type": kind, "sequence_number": seq, **extra}


def frame(event: Dict[str, Any]) -> str:
    """One SSE block, with the event's sequence number as its id when it has one."""
    head = f"id: {event['sequence_number']}\n" if "sequence_number" in event else ""
    return f"{head}data: {json.dumps(event)}\n\n"


class Fake:
    """An HTTP/1.1 server whose request number n is answered by `handler(h, n)`; `log` records each request."""

    def __init__(self, handler: Callable[[Any, int], None]) -> None:
        self.log: List[Dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                n = len(outer.log)
                outer.log.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "at": time.monotonic()})
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                try:
                    handler(self, n)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = _any  # noqa: N815 (http.server's naming)

            def sse(self, ctype: str = "text/event-stream; charset=utf-8") -> None:
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()

            def chunk(self, data: Any) -> None:
                data = data.encode() if isinstance(data, str) else data
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()

            def end(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                self.close_connection = True

            def cut(self) -> None:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

            def json(self, status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn()'s result or exception, or a failed test if it is still running after `seconds` (a hang is a result, not a stuck suite)."""
    out: Dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as err:  # noqa: BLE001 (handed to the test)
            out["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.fixture()
def fake() -> Iterator[Callable[[Callable[[Any, int], None]], Fake]]:
    servers: List[Fake] = []

    def make(handler: Callable[[Any, int], None]) -> Fake:
        servers.append(Fake(handler))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_export_items_splits_lines_on_newline_only(fake) -> None:  # type: ignore[no-untyped-def]
    """The results file is written by JSON.stringify, which leaves U+2028, U+2029 and U+0085 raw in strings."""
    item = {"id": "a", "item_index": 0, "status": "completed", "parts": [{"type": "text", "text": "one\u2028two \u0085 three\u2029\x0b\x1c"}]}
    other = {"id": "b", "item_index": 1, "status": "completed", "parts": []}
    body = (json.dumps(item, ensure_ascii=False) + "\n" + json.dumps(other) + "\n").encode()

    def handler(h: Any, n: int) -> None:
        h.sse("application/x-ndjson")
        for i in range(0, len(body), 7):  # lines and characters split across chunks
            h.chunk(body[i : i + 7])
        h.end()

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        assert list(client.export_items("run_1", "k")) == [item, other]

    async def exported() -> List[Any]:
        async with AsyncWrsClient(f.url, "k") as aclient:
            return [i async for i in aclient.export_items("run_1", "k")]

    assert asyncio.run(exported()) == [item, other]


ACCEPTED = {"run_id": "run_1", "status": "pending", "published_workflow_id": "wf_1", "published_workflow_version_id": "wfv_1", "created_at": "2026-01-01T00:00:00.000Z"}
DOWN = {"type": "server_error", "code": "service_unavailable", "message": "Run run_1 may have started."}


def test_starts_send_a_key_of_their_own_and_return_it(fake) -> None:  # type: ignore[no-untyped-def]
    f = fake(lambda h, n: h.json(202, ACCEPTED))
    sent = lambda n: f.log[n]["headers"].get("idempotency-key")  # noqa: E731
    with WrsClient(f.url, "k") as client:
        first = client.start("w", {})
        rerun = client.rerun("run_0")
        given = client.start("w", {}, idempotency_key="mine-1")

    async def started() -> Any:
        async with AsyncWrsClient(f.url, "k") as aclient:
            return await aclient.start("w", {}), await aclient.rerun("run_0")

    afirst, arerun = asyncio.run(started())
    assert sent(0).startswith("wrs-client-") and len(sent(0)) == len("wrs-client-") + 36
    assert [first["idempotency_key"], rerun["idempotency_key"], given["idempotency_key"], afirst["idempotency_key"], arerun["idempotency_key"]] == [sent(0), sent(1), "mine-1", sent(3), sent(4)]
    assert len({sent(0), sent(1), sent(3), sent(4)}) == 4
    assert first["run_id"] == "run_1"


def test_a_start_whose_answer_is_lost_raises_with_the_key_it_sent(fake) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        if n in (0, 2):
            h.cut()  # the request arrived; its answer never does
        else:
            h.json(202, ACCEPTED)

    f = fake(handler)
    sent = lambda n: f.log[n]["headers"].get("idempotency-key")  # noqa: E731
    with WrsClient(f.url, "k") as client:
        with pytest.raises(APIConnectionError) as lost:
            client.start("w", {})
        assert isinstance(lost.value, httpx.TransportError)  # what callers catching httpx's errors still see
        assert lost.value.idempotency_key == sent(0) and sent(0).startswith("wrs-client-")
        assert client.start("w", {}, idempotency_key=lost.value.idempotency_key)["idempotency_key"] == sent(0)
        assert sent(1) == sent(0)

    async def lost_async() -> Any:
        async with AsyncWrsClient(f.url, "k") as aclient:
            with pytest.raises(APIConnectionError) as alost:
                await aclient.rerun("run_0")
            return alost.value

    assert asyncio.run(lost_async()).idempotency_key == sent(2)


def test_a_refused_start_and_a_stream_ended_before_its_run_carry_the_key(fake) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        if n == 0:
            h.json(503, {"error": DOWN}, {"retry-after": "2"})
        else:
            h.sse()
            h.chunk(": keepalive\n\n")  # then the stream ends: no response.created
            h.end()

    f = fake(handler)
    sent = lambda n: f.log[n]["headers"].get("idempotency-key")  # noqa: E731
    with WrsClient(f.url, "k") as client:
        with pytest.raises(ServiceUnavailableError) as refused:
            client.start("w", {})
        assert refused.value.code == "service_unavailable" and refused.value.idempotency_key == sent(0)
        with pytest.raises(StreamError) as ended:
            list(client.stream("w", {}))
    assert ended.value.idempotency_key == sent(1) and sent(1).startswith("wrs-client-")
    assert len(f.log) == 2  # the stream's start is never repeated


def test_retry_after_is_a_non_negative_integer_or_an_http_date(fake) -> None:  # type: ignore[no-untyped-def]
    in_a_minute = formatdate(time.time() + 60, usegmt=True)
    values = ["7", "0", "-5", "", "garbage", "1.5", "in a bit GMT", in_a_minute, formatdate(time.time() - 60, usegmt=True)]
    f = fake(lambda h, n: h.json(429, {"error": {"type": "rate_limit_error", "code": "rate_limited", "message": "slow"}}, {"retry-after": values[n]}))
    read: List[Optional[float]] = []
    with WrsClient(f.url, "k") as client:
        for _ in values:
            with pytest.raises(RateLimitError) as limited:
                client.get("run_1")
            read.append(limited.value.retry_after)
    date, past = read[-2:]
    assert read[:-2] == [7.0, 0.0, None, None, None, None, None]
    assert date is not None and 58 <= date <= 60 and past == 0.0


@pytest.mark.parametrize("value", ["0", "-5"])
def test_wait_after_a_503_retry_after_below_one_waits_a_second(fake, value: str) -> None:  # type: ignore[no-untyped-def]
    """A proxy's Retry-After of 0 made a hot loop; a negative one crashed time.sleep (sync)."""
    def handler(h: Any, n: int) -> None:
        if n in (0, 2):
            h.json(503, {"error": DOWN}, {"retry-after": value})
        else:
            h.json(200, {"id": "run_1", "status": "completed"})

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        t = time.monotonic()
        assert client.wait("run_1", timeout=30)["status"] == "completed"
        assert time.monotonic() - t >= 0.95

    async def waited() -> float:
        async with AsyncWrsClient(f.url, "k") as aclient:
            t = time.monotonic()
            assert (await aclient.wait("run_1"))["status"] == "completed"
            return time.monotonic() - t

    assert asyncio.run(waited()) >= 0.95


def test_stream_reconnect_refused_with_a_retry_after_below_one(fake) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        if n == 0:
            h.sse()
            h.chunk(frame(CREATED))
            h.end()
        elif n < 3:
            h.json(503, {"error": DOWN}, {"retry-after": "-5" if n == 1 else "0"})
        else:
            h.json(404, {"error": {"type": "not_found_error", "code": "not_found", "message": "gone"}})

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        with pytest.raises(NotFoundError) as gone:
            list(client.stream("w", {}, reconnect_delay=0.01))
    assert gone.value.code == "not_found"
    gaps = [b["at"] - a["at"] for a, b in zip(f.log[1:], f.log[2:])]
    assert len(gaps) == 2 and gaps[1] >= 0.95, gaps  # -5 is no Retry-After (the reconnect delay); 0 is a second


def test_wait_retries_a_dropped_connection_and_a_gateway_error(fake) -> None:  # type: ignore[no-untyped-def]
    """An API restart drops a poll, a proxy answers 504: wait() goes on, as a stream's reconnect does."""
    def handler(h: Any, n: int) -> None:
        if n == 0:
            h.cut()  # the sync client's first poll
        elif n == 2:
            h.json(504, {"error": {"type": "server_error", "message": "gateway timeout"}})  # the async client's
        else:
            h.json(200, {"id": "run_1", "status": "completed"})

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        assert client.wait("run_1")["status"] == "completed"

    async def waited() -> Any:
        async with AsyncWrsClient(f.url, "k") as aclient:
            return await aclient.wait("run_1")

    assert asyncio.run(waited())["status"] == "completed"
    assert len(f.log) == 4


def test_wait_gives_up_after_max_retries_and_never_retries_a_500(fake) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        if n == 0:
            h.cut()
        elif n == 1:
            h.json(502, {"error": {"type": "server_error", "message": "bad gateway"}})
        else:
            h.json(500, {"error": {"type": "server_error", "code": "internal", "message": "bug"}})

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        with pytest.raises(ServiceUnavailableError) as gave_up:
            client.wait("run_1", max_retries=1)
        assert gave_up.value.status == 502 and len(f.log) == 2
        with pytest.raises(ServiceUnavailableError) as bug:
            client.wait("run_1")
        assert (bug.value.status, bug.value.code) == (500, "internal") and len(f.log) == 3


def test_wait_timeout_shorter_than_a_retry_after_polls_once_more_then_raises(fake) -> None:  # type: ignore[no-untyped-def]
    f = fake(lambda h, n: h.json(503, {"error": DOWN}, {"retry-after": "60"}))
    with WrsClient(f.url, "k") as client:
        t = time.monotonic()
        with pytest.raises(TimeoutError):
            client.wait("run_1", timeout=1.0)
    assert 0.95 <= time.monotonic() - t < 5 and len(f.log) == 2


def test_follow_from_now_keeps_the_cursor_of_response_resumed(fake) -> None:  # type: ignore[no-untyped-def]
    """follow(after=None): the first connection's response.resumed says the cursor is 5; it drops
    before any event; 6 and 7 happen meanwhile: the reconnect asks for what follows 5, not for "now"."""
    def handler(h: Any, n: int) -> None:
        h.sse()
        if n == 0:
            h.chunk(f"data: {json.dumps(ev(5, 'response.resumed', response={}))}\n\n")
        else:
            after = h.headers.get("last-event-id")
            events = [ev(6), ev(7), ev(8, "response.completed")] if after is not None else [ev(8, "response.completed")]
            h.chunk("".join(frame(e) for e in events if after is None or e["sequence_number"] > int(after)) + "data: [DONE]\n\n")
        h.end()

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        seqs = within(5, lambda: [e["sequence_number"] for e in client.follow("run_1", after=None, reconnect_delay=0.01)])
    assert seqs == [6, 7, 8]
    assert "last-event-id" not in f.log[0]["headers"] and f.log[1]["headers"].get("last-event-id") == "5"


def test_reconnects_answered_with_resumed_only_count_against_max_reconnects(fake) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        h.sse()
        h.chunk(frame(CREATED) if n == 0 else f"data: {json.dumps(ev(0, 'response.resumed', response={}))}\n\n")
        h.end()

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        with pytest.raises(StreamError, match="gave up reconnecting to run run_1"):
            within(5, lambda: list(client.stream("w", {}, max_reconnects=3, reconnect_delay=0.01)))
    assert len(f.log) == 1 + 3  # the start, then max_reconnects attempts

    def progressing(h: Any, n: int) -> None:
        """Each reconnect brings one new event, then drops: never two failures in a row."""
        h.sse()
        after = int(h.headers.get("last-event-id") or -1)
        resumed = f"data: {json.dumps(ev(after, 'response.resumed', response={}))}\n\n" if n else ""
        h.chunk(resumed + frame(CREATED if n == 0 else ev(after + 1, "response.completed" if after + 1 == 3 else "response.output_text.delta")))
        h.end()

    g = fake(progressing)
    with WrsClient(g.url, "k") as client:
        assert [e["sequence_number"] for e in client.stream("w", {}, max_reconnects=1, reconnect_delay=0.01)] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "error,cls,status",
    [
        ({"type": "not_found_error", "code": "not_found", "message": "Run `run_1` was deleted."}, NotFoundError, 404),
        ({"type": "authentication_error", "code": "key_revoked", "message": "The API key of this stream has been revoked."}, AuthenticationError, 401),
    ],
)
def test_the_stream_error_event_is_raised_with_its_code(fake, error: Dict[str, str], cls: type, status: int) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        h.sse()
        h.chunk(frame(CREATED) + frame(ev(1)) + frame({"type": "error", "error": error}))
        h.end()

    f = fake(handler)
    events: List[Any] = []
    with WrsClient(f.url, "k") as client:
        with pytest.raises(cls) as raised:
            within(5, lambda: events.extend(client.stream("w", {}, reconnect_delay=0.01)))
    assert (raised.value.status, raised.value.type, raised.value.code, raised.value.message) == (status, error["type"], error["code"], error["message"])
    assert [e["sequence_number"] for e in events] == [0, 1] and len(f.log) == 1

    async def followed() -> None:
        async with AsyncWrsClient(f.url, "k") as aclient:
            async for _ in aclient.follow("run_1"):
                pass

    with pytest.raises(cls):
        asyncio.run(followed())


def test_wait_and_run_with_include_output_false_poll_without_the_output(fake) -> None:  # type: ignore[no-untyped-def]
    def handler(h: Any, n: int) -> None:
        if h.command == "POST":
            h.json(202, ACCEPTED)
        else:
            h.json(200, {"id": "run_1", "status": "completed", "output": None})

    f = fake(handler)
    with WrsClient(f.url, "k") as client:
        assert client.wait("run_1", include_output=False)["status"] == "completed"
        assert client.run("w", {}, include_output=False)["status"] == "completed"
        assert client.wait("run_1")["status"] == "completed"

    async def waited() -> None:
        async with AsyncWrsClient(f.url, "k") as aclient:
            await aclient.wait("run_1", include_output=False)
            await aclient.run("w", {}, include_output=False)

    asyncio.run(waited())
    gets = [r["path"] for r in f.log if r["method"] == "GET"]
    bare, without = "/api/v1/runs/run_1", "/api/v1/runs/run_1?include_output=false"
    assert gets == [without, without, bare, without, without]  # by default the run comes with its output, as before
