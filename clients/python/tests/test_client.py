"""The Python client against the real service: runs, errors, streams and their resume, files, pages, links, webhooks."""
from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from datetime import datetime, timezone
from typing import Dict, List

import httpx
import pytest
from httpx_sse import connect_sse

from wrs_client import (
    AsyncWrsClient,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    Run,
    WebhookState,
    WebhookVerificationError,
    WrsClient,
    verify_webhook,
)

NO_RUN = "run_01J00000000000000000000000"


def test_start_get_wait(client: WrsClient, workflows: dict) -> None:
    started = client.start(workflows["greet"], {"name": "Ada"})
    assert started["status"] == "pending" and started["run_id"].startswith("run_")
    assert client.get(started["run_id"])["id"] == started["run_id"]
    run = client.wait(started["run_id"])
    assert run["status"] == "completed"
    assert run["output"]["greeting"][0]["parts"][0]["text"] == "Hello, Ada!"
    assert set(run) == Run.__required_keys__ | Run.__optional_keys__  # the model names every field of the answer
    assert run["webhook"] is None
    assert client.get(started["run_id"], include_output=False) == {**run, "output": None}


def test_wait_polls_within_one_to_three_seconds(client: WrsClient, workflows: dict) -> None:
    started = client.start(workflows["slow"])
    gets: List[float] = []
    original = client.get

    def counting_get(run_id: str, **kwargs):  # type: ignore[no-untyped-def]
        gets.append(time.monotonic())
        return original(run_id, **kwargs)

    client.get = counting_get  # type: ignore[method-assign]
    run = client.wait(started["run_id"], interval=0.1)  # asked too fast: kept at 1 s
    assert run["status"] == "completed"
    gaps = [b - a for a, b in zip(gets, gets[1:])]
    assert gaps and all(0.95 <= g <= 3.5 for g in gaps), gaps


def test_errors_carry_type_code_and_param(client: WrsClient, base_url: str, workflows: dict) -> None:
    with pytest.raises(InvalidRequestError) as bad:
        client.start(workflows["greet"], {"nmae": "x"})
    assert (bad.value.status, bad.value.type, bad.value.code) == (400, "invalid_request_error", "invalid_input_fields")
    assert bad.value.param
    with pytest.raises(NotFoundError) as missing:
        client.get(NO_RUN)
    assert missing.value.type == "not_found_error"
    with WrsClient(base_url, "wrs_sk_nope") as stranger, pytest.raises(AuthenticationError) as refused:
        stranger.get(NO_RUN)
    assert (refused.value.status, refused.value.code) == (401, "invalid_api_key")


def test_async_client_start_wait_and_stream(base_url: str, api_key: str, workflows: dict) -> None:
    async def main() -> None:
        async with AsyncWrsClient(base_url, api_key) as client:
            run = await client.run(workflows["greet"], {"name": "Bo"})
            assert run["status"] == "completed"
            exported = b"".join([chunk async for chunk in client.export_csv(run["id"], "greeting")])
            assert exported.decode().splitlines()[1].endswith(",completed,\"Hello, Bo!\",")  # D35: the results file as CSV
            events = [e async for e in client.stream(workflows["greet"], {"name": "Cy"})]
            assert [e["sequence_number"] for e in events] == list(range(len(events)))
            assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
            with pytest.raises(NotFoundError):
                await client.get(NO_RUN)

    asyncio.run(main())


def _assert_whole_log(events: List[dict]) -> None:
    assert [e["sequence_number"] for e in events] == list(range(len(events))), "no gap, no repeat"
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"


def test_stream_resumes_after_a_drop_and_never_repeats_the_start(proxy, api_key: str, workflows: dict) -> None:  # type: ignore[no-untyped-def]
    events: List[dict] = []
    with WrsClient(proxy.url, api_key) as client:
        for event in client.stream(workflows["slow"], reconnect_delay=0.2):
            events.append(event)
            if event["type"] == "response.output_item.done" and proxy.resumes == 0:
                proxy.cut()  # mid-run (the first of four items is done): the client must reconnect by itself
    _assert_whole_log(events)
    assert proxy.starts == 1 and proxy.resumes >= 1


def test_async_stream_resumes_after_a_drop(proxy, api_key: str, workflows: dict) -> None:  # type: ignore[no-untyped-def]
    async def main() -> List[dict]:
        events: List[dict] = []
        async with AsyncWrsClient(proxy.url, api_key) as client:
            async for event in client.stream(workflows["slow"], reconnect_delay=0.2):
                events.append(event)
                if event["type"] == "response.output_item.done" and proxy.resumes == 0:
                    proxy.cut()
        return events

    _assert_whole_log(asyncio.run(main()))
    assert proxy.starts == 1 and proxy.resumes >= 1


def test_httpx_sse_resumes_with_last_event_id(base_url: str, api_key: str, workflows: dict) -> None:
    """httpx-sse on its own: read part of a stream, drop it, resume with Last-Event-ID: no gap, no repeat."""
    auth = {"authorization": f"Bearer {api_key}"}
    seen: List[dict] = []
    with httpx.Client(base_url=base_url, headers=auth, timeout=60) as http:
        with connect_sse(http, "POST", "/api/v1/responses", json={"workflowId": workflows["slow"], "stream": True, "inputs": {}}) as source:
            for sse in source.iter_sse():
                if sse.data:
                    seen.append(json.loads(sse.data))
                if len(seen) == 3:
                    last_id = sse.id
                    break
        run_id = seen[0]["response"]["run_id"]
        with connect_sse(http, "GET", f"/api/v1/runs/{run_id}/stream", headers={"last-event-id": last_id}) as source:
            resumed = [json.loads(s.data) for s in source.iter_sse() if s.data and s.data != "[DONE]"]
    assert resumed[0]["type"] == "response.resumed" and resumed[0]["sequence_number"] == int(last_id)
    _assert_whole_log(seen + resumed[1:])


def test_follow_from_the_terminal_event_ends_at_once(client: WrsClient, workflows: dict) -> None:
    events = list(client.stream(workflows["greet"], {"name": "Di"}))
    run_id = events[0]["response"]["run_id"]
    assert list(client.follow(run_id, after=events[-1]["sequence_number"])) == []  # answered 204
    assert list(client.follow(run_id, after=0)) == events[1:]


def test_upload_and_read_a_file(client: WrsClient, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello from python\n")
    uploaded = client.upload(path)
    assert uploaded["name"] == "notes.txt" and uploaded["size"] == 18 and uploaded["id"].startswith("file_")
    assert client.get_file(uploaded["id"])["id"] == uploaded["id"]
    assert httpx.get(uploaded["url"]).content == b"hello from python\n"  # a signed link: no key needed
    same = client.upload(b"raw bytes", name="raw.bin")
    assert same["size"] == 9
    page = client.list_files(limit=1)
    assert [f["id"] for f in page["data"]] == [same["id"]] and page["has_more"] is True
    assert client.list_files(starting_after=same["id"])["data"][0]["id"] == uploaded["id"]
    assert client.delete_file(same["id"]) == {"id": same["id"], "object": "file", "deleted": True}
    with pytest.raises(NotFoundError):
        client.get_file(same["id"])


def test_account(client: WrsClient, base_url: str, api_key: str) -> None:
    account = client.account()
    assert account["object"] == "account" and account["id"].startswith("acct_")
    credits = account["credits"]
    assert credits["balance_usd"] > 0 and abs(credits["available_usd"] - (credits["balance_usd"] - credits["held_usd"])) < 1e-8
    assert 0 <= account["file_storage"]["used_bytes"] <= account["file_storage"]["quota_bytes"]
    assert account["workflow_storage"]["used_bytes"] > 0  # the fixtures' published workflows

    async def read() -> dict:
        async with AsyncWrsClient(base_url, api_key) as c:
            return dict(await c.account())

    assert asyncio.run(read())["id"] == account["id"]


def test_list_runs_pages_with_a_cursor(client: WrsClient, workflows: dict) -> None:
    ids = [client.start(workflows["greet"], {"name": f"p{i}"})["run_id"] for i in range(3)]
    first = client.list_runs(limit=2, workflow_id=workflows["greet"])
    assert first["object"] == "list" and len(first["data"]) == 2 and first["has_more"]
    assert first["first_id"] == first["data"][0]["id"] and first["last_id"] == first["data"][1]["id"]
    second = client.list_runs(limit=2, workflow_id=workflows["greet"], starting_after=first["last_id"])
    assert second["data"][0]["id"] not in {r["id"] for r in first["data"]}
    every = [r["id"] for r in client.iter_runs(page_size=2, workflow_id=workflows["greet"])]
    assert every[:3] == list(reversed(ids))  # newest first
    assert len(every) == len(set(every))


def test_metadata_filters_and_delete(client: WrsClient, base_url: str, api_key: str, workflows: dict) -> None:
    """D37: start with metadata, list by metadata, time and workflow; D38: re-run; D39: delete, then 404."""
    since = datetime.now(timezone.utc)
    order = f"ord_{time.time_ns()}"
    mine = client.start(workflows["greet"], {"name": "Meta"}, metadata={"order": order, "src.lang": "py"})
    other = client.start(workflows["greet"], {"name": "Other"}, metadata={"order": "other"})
    run = client.wait(mine["run_id"])
    client.wait(other["run_id"])
    assert run["metadata"] == {"order": order, "src.lang": "py"}
    page = client.list_runs(metadata={"order": order}, created_after=since, workflow_id=workflows["greet"])
    assert [r["id"] for r in page["data"]] == [mine["run_id"]]
    assert [r["id"] for r in client.iter_runs(page_size=1, created_after=since.isoformat())] == [other["run_id"], mine["run_id"]]
    with pytest.raises(InvalidRequestError) as refused:
        client.start(workflows["greet"], {"name": "x"}, metadata={"no spaces": "x"})
    assert refused.value.code == "invalid_metadata"
    assert run["parent_run_id"] is None
    # D38: a re-run names its parent and keeps its metadata; with nothing failed, no re-run of failed items.
    again = client.wait(client.rerun(mine["run_id"], items="all")["run_id"])
    assert again["parent_run_id"] == mine["run_id"] and again["metadata"] == run["metadata"]
    with pytest.raises(InvalidRequestError) as nothing:
        client.rerun(mine["run_id"], items="failed")
    assert nothing.value.code == "nothing_to_rerun"
    assert client.delete_run(mine["run_id"]) == {"id": mine["run_id"], "object": "run", "deleted": True}
    with pytest.raises(NotFoundError):
        client.get(mine["run_id"])

    async def async_side() -> None:
        async with AsyncWrsClient(base_url, api_key) as aclient:
            listed = await aclient.list_runs(metadata={"order": "other"}, created_after=since)
            assert [r["id"] for r in listed["data"]] == [other["run_id"]]
            rerun = await aclient.rerun(other["run_id"], idempotency_key=f"re-{other['run_id']}")
            assert (await aclient.wait(rerun["run_id"]))["parent_run_id"] == other["run_id"]
            assert (await aclient.delete_run(other["run_id"]))["deleted"] is True
            with pytest.raises(NotFoundError):
                await aclient.delete_run(other["run_id"])

    asyncio.run(async_side())


def test_run_controls_and_usage(client: WrsClient, workflows: dict) -> None:
    """D36: max_cost and timeout_seconds on the start, usage on the run, bad values naming their field."""
    run = client.run(workflows["greet"], {"name": "Capped"}, max_cost=1.0, timeout_seconds=60)
    assert run["status"] == "completed"
    assert run["usage"] == {"provider_calls": 0, "input_tokens": 0, "output_tokens": 0, "by_node": {}}
    with pytest.raises(InvalidRequestError) as refused:
        client.start(workflows["greet"], {"name": "x"}, timeout_seconds=0)
    assert (refused.value.status, refused.value.param, refused.value.code) == (400, "timeout_seconds", None)
    with pytest.raises(InvalidRequestError) as negative:
        client.start(workflows["greet"], {"name": "x"}, max_cost=-1)
    assert negative.value.param == "max_cost"


def test_output_items_pages(client: WrsClient, workflows: dict) -> None:
    """D31 item pages: GET /api/v1/runs/{run_id}/outputs/{key}."""
    run = client.run(workflows["lines"])
    items = run["output"]["answers"]
    page = client.output_items(run["id"], "answers", limit=3)
    assert page["object"] == "list" and page["data"] == items[:3] and page["has_more"]
    assert [i["id"] for i in client.iter_output_items(run["id"], "answers", page_size=3)] == [i["id"] for i in items]
    assert list(client.export_items(run["id"], "answers")) == items  # D35: the results file, JSON Lines
    rows = list(csv.reader(io.StringIO(b"".join(client.export_csv(run["id"], "answers")).decode())))
    assert rows[0] == ["item_index", "id", "status", "output", "error"]
    assert [r[1] for r in rows[1:]] == [i["id"] for i in items]  # D35: the same file as CSV
    with pytest.raises(NotFoundError):
        client.output_items(run["id"], "nothing")


def test_stream_link_opens_without_a_key(client: WrsClient, workflows: dict) -> None:
    events = list(client.stream(workflows["greet"], {"name": "Eve"}))
    run_id = events[0]["response"]["run_id"]
    link = client.stream_link(run_id, ttl_seconds=300)
    assert link["url"].split("?")[0].endswith(f"/streams/{run_id}")
    with httpx.Client(timeout=30) as anonymous:
        with connect_sse(anonymous, "GET", link["url"], headers={"last-event-id": "0"}) as source:
            got = [json.loads(s.data) for s in source.iter_sse() if s.data and s.data != "[DONE]"]
    assert got[1:] == events[1:]
    with pytest.raises(InvalidRequestError) as too_long:
        client.stream_link(run_id, ttl_seconds=7200)
    assert too_long.value.param == "ttl_seconds"


def test_webhooks_verify_with_standardwebhooks(client: WrsClient, workflows: dict) -> None:
    received: List[Dict[str, object]] = []
    arrived = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers["content-length"]))
            received.append({"body": body, "headers": dict(self.headers)})
            self.send_response(204)
            self.end_headers()
            arrived.set()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = client.start(workflows["greet"], {"name": "Hook"}, webhook=f"http://127.0.0.1:{server.server_port}/hook")
        assert arrived.wait(30), "no webhook delivery"
    finally:
        server.shutdown()
    secret = os.environ["WRS_WEBHOOK_SECRET"]
    hit = received[0]
    run = verify_webhook(hit["body"], hit["headers"], secret)  # type: ignore[arg-type]
    assert run["id"] == started["run_id"] and run["status"] == "completed"
    assert set(client.get(started["run_id"])["webhook"] or {}) == WebhookState.__required_keys__  # D20: its delivery, as typed
    with pytest.raises(WebhookVerificationError):
        verify_webhook(bytes(hit["body"]).replace(b"Hook", b"Evil"), hit["headers"], secret)  # type: ignore[arg-type]


def test_priority(client: WrsClient, workflows: dict) -> None:
    """D36: a run started with a priority completes; a priority that is not low, normal or high is 400 naming the field."""
    started = client.start(workflows["greet"], {"name": "Soon"}, priority="high")
    assert client.wait(started["run_id"])["status"] == "completed"
    with pytest.raises(InvalidRequestError) as refused:
        client.start(workflows["greet"], {"name": "x"}, priority="urgent")
    assert refused.value.param == "priority"


def test_delete_workflow(client: WrsClient, base_url: str, api_key: str) -> None:
    """D26: DELETE /api/v1/workflows/{workflow_id}; afterwards its contract is 404."""
    doc = {
        "slug": "py-deleted",
        "nodes": [{"id": "greet", "type": "text", "template": "Hello!"}, {"id": "out", "type": "user_result", "label": "Out"}],
        "edges": [{"from": "greet", "to": "out"}],
    }
    res = httpx.post(f"{base_url}/api/v1/workflows", json=doc, headers={"authorization": f"Bearer {api_key}"}, timeout=30)
    assert res.status_code == 201, res.text
    assert client.workflow("py-deleted")["version"] == 1
    assert client.delete_workflow("py-deleted") == {"id": res.json()["workflow_id"], "object": "workflow", "deleted": True}
    with pytest.raises(NotFoundError) as gone:
        client.workflow("py-deleted")
    assert gone.value.code == "published_workflow_not_found"
