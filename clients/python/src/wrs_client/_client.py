"""
The clients: `WrsClient` (sync) and `AsyncWrsClient` (asyncio), the same methods on httpx.

They follow the service's client rules: poll a run every 1-3 s; when a stream drops, reconnect
with `GET /api/v1/runs/{id}/stream` and `Last-Event-ID` (never repeat the start); a resume at the
terminal event is answered 204 and ends the stream; 429 and 503 answers are waited out as their
`Retry-After` says.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from datetime import datetime
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, Optional, Tuple, Union, cast
from urllib.parse import quote

import httpx
from httpx_sse import EventSource, ServerSentEvent

from ._errors import APIConnectionError, APIError, StreamError, error_from_event, error_from_response
from ._types import (
    Account,
    DeletedFile,
    DeletedWorkflow,
    DeletedRun,
    TERMINAL_EVENTS,
    TERMINAL_STATUSES,
    AsyncStart,
    File,
    OutputItem,
    Page,
    Run,
    StreamEvent,
    StreamLink,
    WorkflowContract,
)

__all__ = ["WrsClient", "AsyncWrsClient"]

# Reads wait longer than the stream's keepalive interval (15 s), so a quiet stream is not a timeout.
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
# What a dropped connection looks like to httpx.
_DROPPED = (httpx.TransportError, httpx.StreamError)

Query = Dict[str, Union[str, int]]


def _path(*segments: str) -> str:
    return "/api/v1/" + "/".join(quote(s, safe="") for s in segments)


def _query(**values: Any) -> Query:
    return {k: v for k, v in values.items() if v is not None}


def _include_output(include: bool) -> Query:
    """The query of a run's read: nothing by default, `include_output=false` for the run without its items."""
    return {} if include else {"include_output": "false"}


def _clamp_interval(seconds: float) -> float:
    """The spec asks for polls every 1-3 s."""
    return min(3.0, max(1.0, seconds))


def _start_body(workflow_id: str, inputs: Optional[Mapping[str, Any]], version: Union[int, str, None], webhook: Optional[str], stream: bool, metadata: Optional[Mapping[str, str]] = None, max_cost: Optional[float] = None, timeout_seconds: Optional[int] = None, priority: Optional[str] = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"workflowId": workflow_id, "inputs": dict(inputs or {})}
    if max_cost is not None:
        body["max_cost"] = max_cost  # D36: the most the run may cost, USD
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds  # D36: the run fails once this many seconds pass
    if version is not None:
        body["version"] = version
    if webhook is not None:
        body["webhook"] = webhook
    if metadata is not None:
        body["metadata"] = dict(metadata)
    if priority is not None:
        body["priority"] = priority  # D36: "low", "normal" (the default) or "high"
    if stream:
        body["stream"] = True
    return body


def _idempotency_key(given: Optional[str]) -> str:
    """
    The key a start, stream or re-run is sent with: the caller's, else a fresh `wrs-client-<uuid>`
    (as the OpenAI and Stripe SDKs do): without one, retrying a start whose answer was lost
    starts, and bills, a second run.
    """
    return given or f"wrs-client-{uuid.uuid4()}"


@contextlib.contextmanager
def _keyed(key: str) -> Iterator[None]:
    """Gives the errors of a start sent with `key` that key: an APIError carries it, a lost answer becomes an APIConnectionError."""
    try:
        yield
    except APIError as err:
        err.idempotency_key = key
        raise
    except _DROPPED as err:
        raise APIConnectionError(f"the answer was lost ({err!r}); the run may have started: retry with its idempotency_key", key, _request_of(err)) from err


def _request_of(err: BaseException) -> Optional[httpx.Request]:
    try:
        return err.request if isinstance(err, httpx.RequestError) else None
    except RuntimeError:  # httpx raises when the error has no request
        return None


def _started(answer: Any, key: str) -> AsyncStart:
    """The 202 answer, with the key it was sent with (`idempotency_key`, the client's addition)."""
    return cast(AsyncStart, {**answer, "idempotency_key": key})


def _time(value: Union[datetime, str, None]) -> Optional[str]:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("a created_after/created_before datetime needs a timezone")
        return value.isoformat()
    return value


def _runs_query(limit: Optional[int], starting_after: Optional[str], status: Optional[str], workflow_id: Optional[str], created_after: Union[datetime, str, None], created_before: Union[datetime, str, None], metadata: Optional[Mapping[str, str]]) -> Query:
    """The list's query (D23, D37): every filter AND-ed; metadata pairs as `metadata[<key>]=<value>`."""
    params = _query(limit=limit, starting_after=starting_after, status=status, workflow_id=workflow_id, created_after=_time(created_after), created_before=_time(created_before))
    for key, value in (metadata or {}).items():
        params[f"metadata[{key}]"] = value
    return params


def _upload_args(name: Optional[str], file: Any, mime_type: Optional[str]) -> Tuple[Query, Dict[str, str]]:
    if name is None and isinstance(file, (str, os.PathLike)):
        name = os.path.basename(os.fspath(file))
    return _query(name=name), {"content-type": mime_type or "application/octet-stream"}


class _JsonLines:
    """
    Splits a JSON Lines body into lines on b"\\n" only. The service writes it with JSON.stringify,
    which leaves U+2028, U+2029 and U+0085 raw inside strings; httpx's iter_lines() splits like
    str.splitlines(), on those too, and would cut such an item in two. Each chunk is scanned once.
    """

    def __init__(self) -> None:
        self._rest = bytearray()

    def feed(self, chunk: bytes) -> List[bytes]:
        if b"\n" not in chunk:
            self._rest += chunk
            return []
        first, *middle, last = chunk.split(b"\n")
        self._rest += first
        lines = [bytes(self._rest), *middle]
        self._rest = bytearray(last)
        return [line for line in lines if line.strip()]

    def end(self) -> List[bytes]:
        return [bytes(self._rest)] if self._rest.strip() else []


class _Resume:
    """Where a stream is: the run it belongs to and the last sequence number delivered."""

    def __init__(self, run_id: Optional[str], after: Optional[int], idempotency_key: Optional[str] = None) -> None:
        self.run_id = run_id
        self.last = after
        self.failures = 0
        self.idempotency_key = idempotency_key  # the start's, for its errors until the run is created

    def headers(self) -> Dict[str, str]:
        return {} if self.last is None else {"last-event-id": str(self.last)}

    def take(self, sse: ServerSentEvent) -> Tuple[Optional[StreamEvent], bool]:
        """Reads one SSE: (event to yield or None, whether the stream is over)."""
        if sse.data == "":
            return None, False  # a dataless block (httpx-sse reports keepalives after an id this way)
        if sse.data == "[DONE]":
            return None, True
        event = cast(StreamEvent, json.loads(sse.data))
        kind = event.get("type")
        if kind == "error":
            raise error_from_event(event)  # the run was deleted, or the key revoked: nothing to resume
        seq = event.get("sequence_number")
        if kind == "response.resumed":
            # One per connection, not part of the run's log, but its sequence number is where
            # "from now on" (after=None) began: kept, a reconnect resumes there, not at a later "now".
            if self.last is None and seq is not None:
                self.last = seq
            return None, False
        if kind == "response.created":
            self.run_id = event["response"]["run_id"]
        if self.last is not None and seq is not None and seq <= self.last:
            return None, False
        if seq is not None:
            self.last = seq
            # Only an event of the log past the cursor is progress: a server or proxy that answers
            # every reconnect with response.resumed and closes must still run out of reconnects.
            self.failures = 0
        return event, kind in TERMINAL_EVENTS

    def next_delay(self, cause: BaseException, reconnect_delay: float, max_reconnects: int) -> float:
        """After a connection failed or ended early: seconds before the next, or raises when there is none."""
        if isinstance(cause, APIError) and (not cause.retryable or self.run_id is None):
            if self.run_id is None:
                cause.idempotency_key = self.idempotency_key
            raise cause  # refused for good (or the start itself was refused): nothing to resume
        if self.run_id is None:
            lost = StreamError("the stream ended before the run was created (it may have started: retry with its idempotency_key)")
            lost.idempotency_key = self.idempotency_key
            raise lost from cause
        self.failures += 1
        if self.failures > max_reconnects:
            raise StreamError(f"gave up reconnecting to run {self.run_id} after {max_reconnects} attempts") from cause
        return _retry_delay(cause, reconnect_delay * self.failures)


def _retry_delay(err: BaseException, fallback: float) -> float:
    """
    Seconds before retrying after `err`: its Retry-After when it gave one, else `fallback`. The
    service always asks for 1 s or more; a 0 from a proxy or load balancer in front of it would
    make a hot loop, so it is kept within 1-60 s.
    """
    if isinstance(err, APIError) and err.retry_after is not None:
        return min(60.0, max(1.0, err.retry_after))
    return fallback


class _Waiting:
    """
    A wait()'s pace: every `interval` s while the run works; a 429 or 503 as its Retry-After says
    (as long as it lasts); a poll that got no answer (an API process restarting, a rolling deploy)
    or a proxy's 502 or 504 after a growing delay, at most `max_retries` times in a row, since a
    poll is a GET and safe to send again. With a `timeout`, the last sleep is cut to the time left
    and the run is polled once more before TimeoutError.
    """

    def __init__(self, run_id: str, interval: float, timeout: Optional[float], max_retries: int) -> None:
        self.run_id = run_id
        self.every = _clamp_interval(interval)
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.max_retries = max_retries
        self.failures = 0

    def polled(self) -> float:
        """After a poll that found the run working: seconds to the next."""
        self.failures = 0
        return self.sleep_for(self.every)

    def failed(self, err: BaseException) -> float:
        """After a poll that failed: seconds to the next, or raises `err` when it is not worth another."""
        if isinstance(err, APIError) and err.retryable:
            return self.sleep_for(_retry_delay(err, self.every))
        if isinstance(err, APIError) and err.status not in (502, 504):
            raise err
        self.failures += 1
        if self.failures > self.max_retries:
            raise err
        return self.sleep_for(self.every * self.failures)

    def sleep_for(self, delay: float) -> float:
        if self.deadline is None:
            return delay
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"run {self.run_id} did not end within {self.timeout} s")
        return min(delay, left)


class _Base:
    def __init__(self, base_url: str, api_key: Optional[str]) -> None:
        self.base_url = base_url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get("WRS_API_KEY")
        if not key:
            raise ValueError("an API key is needed: pass api_key= or set WRS_API_KEY")
        self._headers = {"authorization": f"Bearer {key}", "user-agent": "wrs-client-python/0.1"}


class WrsClient(_Base):
    """A synchronous client. Use as a context manager, or call `close()`."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *, timeout: Union[float, httpx.Timeout] = DEFAULT_TIMEOUT, http_client: Optional[httpx.Client] = None) -> None:
        super().__init__(base_url, api_key)
        self._http = http_client or httpx.Client(timeout=timeout)

    def __enter__(self) -> "WrsClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- plumbing -------------------------------------------------------------------------------
    def _send(self, method: str, path: str, *, params: Optional[Query] = None, json_body: Any = None, content: Any = None, headers: Optional[Dict[str, str]] = None, stream: bool = False) -> httpx.Response:
        request = self._http.build_request(method, self.base_url + path, params=params, json=json_body, content=content, headers={**self._headers, **(headers or {})})
        response = self._http.send(request, stream=stream)
        if response.status_code >= 400:
            response.read()
            response.close()
            raise error_from_response(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, **kwargs).json()

    # -- runs -----------------------------------------------------------------------------------
    def start(self, workflow_id: str, inputs: Optional[Mapping[str, Any]] = None, *, version: Union[int, str, None] = None, webhook: Optional[str] = None, idempotency_key: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None, max_cost: Optional[float] = None, timeout_seconds: Optional[int] = None, priority: Optional[str] = None) -> AsyncStart:
        """Starts a run (async mode): the 202 answer with its `run_id`, and the `idempotency_key` it
        was sent with (the caller's, or the client's own), which its errors carry too: a retry with it
        never starts a second run."""
        key = _idempotency_key(idempotency_key)
        with _keyed(key):
            answer = self._json("POST", _path("responses"), json_body=_start_body(workflow_id, inputs, version, webhook, False, metadata, max_cost, timeout_seconds, priority), headers={"idempotency-key": key})
        return _started(answer, key)

    def rerun(self, run_id: str, *, items: str = "all", idempotency_key: Optional[str] = None) -> AsyncStart:
        """D38: a new run of the same version, inputs, metadata and webhook, naming `run_id` as its
        `parent_run_id`. `items="failed"` (a finished run) runs only the failed items again and
        carries the completed ones over, billing only what runs; `"all"` runs it whole. Its
        idempotency key is handled as `start`'s."""
        key = _idempotency_key(idempotency_key)
        with _keyed(key):
            answer = self._json("POST", _path("runs", run_id, "rerun"), json_body={"items": items}, headers={"idempotency-key": key})
        return _started(answer, key)

    def get(self, run_id: str, *, include_output: bool = True) -> Run:
        """Reads a run: its status, and its output once completed. `include_output=False` reads it
        without its items (`output` None): a finished big run's answer holds every item, so poll
        such a run this way and page its items (`iter_output_items`)."""
        return cast(Run, self._json("GET", _path("runs", run_id), params=_include_output(include_output)))

    def cancel(self, run_id: str) -> Run:
        """Asks a run to stop; it turns `cancelled` once it has."""
        return cast(Run, self._json("POST", _path("runs", run_id, "cancel")))

    def delete_run(self, run_id: str) -> DeletedRun:
        """Deletes a run (D39; a live one is cancelled first): afterwards every read of it is 404."""
        return cast(DeletedRun, self._json("DELETE", _path("runs", run_id)))

    def wait(self, run_id: str, *, interval: float = 1.0, timeout: Optional[float] = None, max_retries: int = 10, include_output: bool = True) -> Run:
        """Polls until the run ends (every `interval` s, kept within 1-3 s); 429/503 are waited out,
        and a poll that got no answer or a 502/504 is tried again, up to `max_retries` times in a
        row. With `timeout`, TimeoutError once that many seconds have passed (after a last poll).
        The run comes with its output; `include_output=False` polls without it (`output` None), for
        a big run whose items are better paged (`iter_output_items`) or exported (`export_items`)."""
        waiting = _Waiting(run_id, interval, timeout, max_retries)
        while True:
            try:
                # A run's output is None until it has ended, so only the last poll's answer carries it.
                run = self.get(run_id, include_output=include_output)
            except (APIError, *_DROPPED) as err:
                delay = waiting.failed(err)
            else:
                if run["status"] in TERMINAL_STATUSES:
                    return run
                delay = waiting.polled()
            time.sleep(delay)

    def run(self, workflow_id: str, inputs: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> Run:
        """Starts a run and waits for its end (`timeout`, `include_output` as wait's; the rest as start's)."""
        timeout, include_output = kwargs.pop("timeout", None), kwargs.pop("include_output", True)
        return self.wait(self.start(workflow_id, inputs, **kwargs)["run_id"], timeout=timeout, include_output=include_output)

    def list_runs(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None, status: Optional[str] = None, workflow_id: Optional[str] = None, created_after: Union[datetime, str, None] = None, created_before: Union[datetime, str, None] = None, metadata: Optional[Mapping[str, str]] = None) -> "Page[Run]":
        """One page of your runs, newest first."""
        params = _runs_query(limit, starting_after, status, workflow_id, created_after, created_before, metadata)
        return cast("Page[Run]", self._json("GET", _path("runs"), params=params))

    def iter_runs(self, *, page_size: Optional[int] = None, status: Optional[str] = None, workflow_id: Optional[str] = None, created_after: Union[datetime, str, None] = None, created_before: Union[datetime, str, None] = None, metadata: Optional[Mapping[str, str]] = None) -> Iterator[Run]:
        """Every run, newest first, fetching pages as needed."""
        after: Optional[str] = None
        while True:
            page = self.list_runs(limit=page_size, starting_after=after, status=status, workflow_id=workflow_id, created_after=created_after, created_before=created_before, metadata=metadata)
            yield from page["data"]
            if not page["has_more"] or page["last_id"] is None:
                return
            after = page["last_id"]

    def output_items(self, run_id: str, key: str, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> "Page[OutputItem]":
        """One page of one output's items (`limit` 1-1000, default 100), for big runs finished or live."""
        return cast("Page[OutputItem]", self._json("GET", _path("runs", run_id, "outputs", key), params=_query(limit=limit, starting_after=starting_after)))

    def iter_output_items(self, run_id: str, key: str, *, page_size: Optional[int] = None) -> Iterator[OutputItem]:
        """Every item of one output, in order, fetching pages as needed."""
        after: Optional[str] = None
        while True:
            page = self.output_items(run_id, key, limit=page_size, starting_after=after)
            yield from page["data"]
            if not page["has_more"] or page["last_id"] is None:
                return
            after = page["last_id"]

    def export_items(self, run_id: str, key: str) -> Iterator[OutputItem]:
        """The results file (D35): every item of one output, in order, streamed as JSON Lines; also the finished items of a failed or cancelled run."""
        response = self._send("GET", _path("runs", run_id, "outputs", key), headers={"accept": "application/x-ndjson"}, stream=True)
        lines = _JsonLines()
        try:
            for chunk in response.iter_bytes():
                for line in lines.feed(chunk):
                    yield cast(OutputItem, json.loads(line))
            for line in lines.end():
                yield cast(OutputItem, json.loads(line))
        finally:
            response.close()

    def export_csv(self, run_id: str, key: str) -> Iterator[bytes]:
        """The results file as CSV (D35; header item_index,id,status,output,error), its bytes as they arrive: write them to a file."""
        response = self._send("GET", _path("runs", run_id, "outputs", key), headers={"accept": "text/csv"}, stream=True)
        try:
            yield from response.iter_bytes()
        finally:
            response.close()

    # -- streams --------------------------------------------------------------------------------
    def stream(self, workflow_id: str, inputs: Optional[Mapping[str, Any]] = None, *, version: Union[int, str, None] = None, webhook: Optional[str] = None, idempotency_key: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None, max_cost: Optional[float] = None, timeout_seconds: Optional[int] = None, priority: Optional[str] = None, max_reconnects: int = 10, reconnect_delay: float = 0.5) -> Iterator[StreamEvent]:
        """
        Starts a run in stream mode and yields its events, `response.created` first and the terminal
        event last. A dropped connection is resumed with Last-Event-ID: every event comes once, and
        the start is never sent twice. The stream's `error` event (the run was deleted, the key
        revoked) is raised as an APIError with its code (`not_found`, `key_revoked`). The start carries an idempotency key (the caller's or the
        client's own), which an error before the run was created carries too, as `start`'s.
        """
        key = _idempotency_key(idempotency_key)
        body = _start_body(workflow_id, inputs, version, webhook, True, metadata, max_cost, timeout_seconds, priority)
        yield from self._follow(_Resume(None, None, key), ("POST", _path("responses"), body, {"idempotency-key": key}), max_reconnects, reconnect_delay)

    def follow(self, run_id: str, *, after: Optional[int] = 0, max_reconnects: int = 10, reconnect_delay: float = 0.5) -> Iterator[StreamEvent]:
        """Yields a run's events after sequence number `after` (0: all but `response.created`; None: from now on)."""
        yield from self._follow(_Resume(run_id, after), None, max_reconnects, reconnect_delay)

    def _follow(self, state: _Resume, first: Optional[Tuple[str, str, Any, Dict[str, str]]], max_reconnects: int, reconnect_delay: float) -> Iterator[StreamEvent]:
        while True:
            try:
                if first is not None:
                    method, path, body, headers = first
                    first = None  # whatever happens, the start is sent once
                    response = self._send(method, path, json_body=body, headers={"accept": "text/event-stream", **headers}, stream=True)
                else:
                    response = self._send("GET", _path("runs", cast(str, state.run_id), "stream"), headers={"accept": "text/event-stream", **state.headers()}, stream=True)
                try:
                    if response.status_code == 204:
                        return  # the cursor is the terminal event: nothing left
                    for sse in EventSource(response).iter_sse():
                        event, over = state.take(sse)
                        if event is not None:
                            yield event
                        if over:
                            return
                finally:
                    response.close()
                cause: BaseException = StreamError("the stream closed before the run ended")
            except (APIError, *_DROPPED) as err:
                cause = err
            time.sleep(state.next_delay(cause, reconnect_delay, max_reconnects))

    def stream_link(self, run_id: str, *, ttl_seconds: Optional[int] = None) -> StreamLink:
        """A signed URL to the run's stream that works without the API key (at most 1 h): for a browser's EventSource."""
        return cast(StreamLink, self._json("POST", _path("runs", run_id, "stream-link"), json_body=_query(ttl_seconds=ttl_seconds)))

    # -- files and workflows ----------------------------------------------------------------------
    def upload(self, file: Any, *, name: Optional[str] = None, mime_type: Optional[str] = None) -> File:
        """Uploads bytes, a path or a binary file object; the service sniffs the type. Use the `id` as an input."""
        params, headers = _upload_args(name, file, mime_type)
        if isinstance(file, (str, os.PathLike)):
            with open(file, "rb") as fh:
                return cast(File, self._json("POST", _path("files"), params=params, content=fh, headers=headers))
        return cast(File, self._json("POST", _path("files"), params=params, content=file, headers=headers))

    def get_file(self, file_id: str) -> File:
        """A file of your account, with a fresh signed link."""
        return cast(File, self._json("GET", _path("files", file_id)))

    def list_files(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> "Page[File]":
        """One page of your uploads, newest first (what counts against the storage quota)."""
        return cast("Page[File]", self._json("GET", _path("files"), params=_query(limit=limit, starting_after=starting_after)))

    def delete_file(self, file_id: str) -> DeletedFile:
        """Deletes an upload (D19), freeing its room in the storage quota; its links are 404 after."""
        return cast(DeletedFile, self._json("DELETE", _path("files", file_id)))

    def account(self) -> Account:
        """Your account (D41): its credit (balance, held by runs in progress, available) and its storage quotas."""
        return cast(Account, self._json("GET", _path("account")))

    def workflow(self, workflow_id: str, *, version: Union[int, str, None] = None) -> WorkflowContract:
        """A published workflow's contract: its inputs (with a JSON Schema) and outputs."""
        return cast(WorkflowContract, self._json("GET", _path("workflows", workflow_id), params=_query(version=version)))

    def delete_workflow(self, workflow_id: str) -> DeletedWorkflow:
        """Deletes one of your workflows with every version (D26); runs under way finish, and its runs stay readable."""
        return cast(DeletedWorkflow, self._json("DELETE", _path("workflows", workflow_id)))


class AsyncWrsClient(_Base):
    """The asyncio client: the same methods as WrsClient, as coroutines and async iterators."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *, timeout: Union[float, httpx.Timeout] = DEFAULT_TIMEOUT, http_client: Optional[httpx.AsyncClient] = None) -> None:
        super().__init__(base_url, api_key)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> "AsyncWrsClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, method: str, path: str, *, params: Optional[Query] = None, json_body: Any = None, content: Any = None, headers: Optional[Dict[str, str]] = None, stream: bool = False) -> httpx.Response:
        request = self._http.build_request(method, self.base_url + path, params=params, json=json_body, content=content, headers={**self._headers, **(headers or {})})
        response = await self._http.send(request, stream=stream)
        if response.status_code >= 400:
            await response.aread()
            await response.aclose()
            raise error_from_response(response)
        return response

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return (await self._send(method, path, **kwargs)).json()

    async def start(self, workflow_id: str, inputs: Optional[Mapping[str, Any]] = None, *, version: Union[int, str, None] = None, webhook: Optional[str] = None, idempotency_key: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None, max_cost: Optional[float] = None, timeout_seconds: Optional[int] = None, priority: Optional[str] = None) -> AsyncStart:
        key = _idempotency_key(idempotency_key)
        with _keyed(key):
            answer = await self._json("POST", _path("responses"), json_body=_start_body(workflow_id, inputs, version, webhook, False, metadata, max_cost, timeout_seconds, priority), headers={"idempotency-key": key})
        return _started(answer, key)

    async def rerun(self, run_id: str, *, items: str = "all", idempotency_key: Optional[str] = None) -> AsyncStart:
        key = _idempotency_key(idempotency_key)
        with _keyed(key):
            answer = await self._json("POST", _path("runs", run_id, "rerun"), json_body={"items": items}, headers={"idempotency-key": key})
        return _started(answer, key)

    async def get(self, run_id: str, *, include_output: bool = True) -> Run:
        return cast(Run, await self._json("GET", _path("runs", run_id), params=_include_output(include_output)))

    async def cancel(self, run_id: str) -> Run:
        return cast(Run, await self._json("POST", _path("runs", run_id, "cancel")))

    async def delete_run(self, run_id: str) -> DeletedRun:
        return cast(DeletedRun, await self._json("DELETE", _path("runs", run_id)))

    async def wait(self, run_id: str, *, interval: float = 1.0, timeout: Optional[float] = None, max_retries: int = 10, include_output: bool = True) -> Run:
        waiting = _Waiting(run_id, interval, timeout, max_retries)
        while True:
            try:
                run = await self.get(run_id, include_output=include_output)
            except (APIError, *_DROPPED) as err:
                delay = waiting.failed(err)
            else:
                if run["status"] in TERMINAL_STATUSES:
                    return run
                delay = waiting.polled()
            await asyncio.sleep(delay)

    async def run(self, workflow_id: str, inputs: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> Run:
        timeout, include_output = kwargs.pop("timeout", None), kwargs.pop("include_output", True)
        started = await self.start(workflow_id, inputs, **kwargs)
        return await self.wait(started["run_id"], timeout=timeout, include_output=include_output)

    async def list_runs(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None, status: Optional[str] = None, workflow_id: Optional[str] = None, created_after: Union[datetime, str, None] = None, created_before: Union[datetime, str, None] = None, metadata: Optional[Mapping[str, str]] = None) -> "Page[Run]":
        params = _runs_query(limit, starting_after, status, workflow_id, created_after, created_before, metadata)
        return cast("Page[Run]", await self._json("GET", _path("runs"), params=params))

    async def iter_runs(self, *, page_size: Optional[int] = None, status: Optional[str] = None, workflow_id: Optional[str] = None, created_after: Union[datetime, str, None] = None, created_before: Union[datetime, str, None] = None, metadata: Optional[Mapping[str, str]] = None) -> AsyncIterator[Run]:
        after: Optional[str] = None
        while True:
            page = await self.list_runs(limit=page_size, starting_after=after, status=status, workflow_id=workflow_id, created_after=created_after, created_before=created_before, metadata=metadata)
            for run in page["data"]:
                yield run
            if not page["has_more"] or page["last_id"] is None:
                return
            after = page["last_id"]

    async def output_items(self, run_id: str, key: str, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> "Page[OutputItem]":
        return cast("Page[OutputItem]", await self._json("GET", _path("runs", run_id, "outputs", key), params=_query(limit=limit, starting_after=starting_after)))

    async def iter_output_items(self, run_id: str, key: str, *, page_size: Optional[int] = None) -> AsyncIterator[OutputItem]:
        after: Optional[str] = None
        while True:
            page = await self.output_items(run_id, key, limit=page_size, starting_after=after)
            for item in page["data"]:
                yield item
            if not page["has_more"] or page["last_id"] is None:
                return
            after = page["last_id"]

    async def export_items(self, run_id: str, key: str) -> AsyncIterator[OutputItem]:
        response = await self._send("GET", _path("runs", run_id, "outputs", key), headers={"accept": "application/x-ndjson"}, stream=True)
        lines = _JsonLines()
        try:
            async for chunk in response.aiter_bytes():
                for line in lines.feed(chunk):
                    yield cast(OutputItem, json.loads(line))
            for line in lines.end():
                yield cast(OutputItem, json.loads(line))
        finally:
            await response.aclose()

    async def export_csv(self, run_id: str, key: str) -> AsyncIterator[bytes]:
        response = await self._send("GET", _path("runs", run_id, "outputs", key), headers={"accept": "text/csv"}, stream=True)
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        finally:
            await response.aclose()

    async def stream(self, workflow_id: str, inputs: Optional[Mapping[str, Any]] = None, *, version: Union[int, str, None] = None, webhook: Optional[str] = None, idempotency_key: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None, max_cost: Optional[float] = None, timeout_seconds: Optional[int] = None, priority: Optional[str] = None, max_reconnects: int = 10, reconnect_delay: float = 0.5) -> AsyncIterator[StreamEvent]:
        key = _idempotency_key(idempotency_key)
        body = _start_body(workflow_id, inputs, version, webhook, True, metadata, max_cost, timeout_seconds, priority)
        async for event in self._follow(_Resume(None, None, key), ("POST", _path("responses"), body, {"idempotency-key": key}), max_reconnects, reconnect_delay):
            yield event

    async def follow(self, run_id: str, *, after: Optional[int] = 0, max_reconnects: int = 10, reconnect_delay: float = 0.5) -> AsyncIterator[StreamEvent]:
        async for event in self._follow(_Resume(run_id, after), None, max_reconnects, reconnect_delay):
            yield event

    async def _follow(self, state: _Resume, first: Optional[Tuple[str, str, Any, Dict[str, str]]], max_reconnects: int, reconnect_delay: float) -> AsyncIterator[StreamEvent]:
        while True:
            try:
                if first is not None:
                    method, path, body, headers = first
                    first = None  # whatever happens, the start is sent once
                    response = await self._send(method, path, json_body=body, headers={"accept": "text/event-stream", **headers}, stream=True)
                else:
                    response = await self._send("GET", _path("runs", cast(str, state.run_id), "stream"), headers={"accept": "text/event-stream", **state.headers()}, stream=True)
                try:
                    if response.status_code == 204:
                        return  # the cursor is the terminal event: nothing left
                    async for sse in EventSource(response).aiter_sse():
                        event, over = state.take(sse)
                        if event is not None:
                            yield event
                        if over:
                            return
                finally:
                    await response.aclose()
                cause: BaseException = StreamError("the stream closed before the run ended")
            except (APIError, *_DROPPED) as err:
                cause = err
            await asyncio.sleep(state.next_delay(cause, reconnect_delay, max_reconnects))

    async def stream_link(self, run_id: str, *, ttl_seconds: Optional[int] = None) -> StreamLink:
        return cast(StreamLink, await self._json("POST", _path("runs", run_id, "stream-link"), json_body=_query(ttl_seconds=ttl_seconds)))

    async def upload(self, file: Any, *, name: Optional[str] = None, mime_type: Optional[str] = None) -> File:
        params, headers = _upload_args(name, file, mime_type)
        if isinstance(file, (str, os.PathLike)):
            with open(file, "rb") as fh:  # read in the event loop's thread: uploads are bounded (100 MiB)
                file = fh.read()
        elif hasattr(file, "read"):
            file = file.read()
        return cast(File, await self._json("POST", _path("files"), params=params, content=file, headers=headers))

    async def get_file(self, file_id: str) -> File:
        return cast(File, await self._json("GET", _path("files", file_id)))

    async def list_files(self, *, limit: Optional[int] = None, starting_after: Optional[str] = None) -> "Page[File]":
        return cast("Page[File]", await self._json("GET", _path("files"), params=_query(limit=limit, starting_after=starting_after)))

    async def delete_file(self, file_id: str) -> DeletedFile:
        return cast(DeletedFile, await self._json("DELETE", _path("files", file_id)))

    async def account(self) -> Account:
        return cast(Account, await self._json("GET", _path("account")))

    async def workflow(self, workflow_id: str, *, version: Union[int, str, None] = None) -> WorkflowContract:
        return cast(WorkflowContract, await self._json("GET", _path("workflows", workflow_id), params=_query(version=version)))

    async def delete_workflow(self, workflow_id: str) -> DeletedWorkflow:
        return cast(DeletedWorkflow, await self._json("DELETE", _path("workflows", workflow_id)))
