"""Typed models of the API's JSON objects (TypedDicts: the answers are returned as parsed, unchanged)."""
from __future__ import annotations

import sys
from typing import Any, Dict, Generic, List, Literal, Optional, TypeVar

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover
    from typing_extensions import NotRequired, TypedDict

RunStatus = Literal["pending", "running", "completed", "failed", "cancelled"]
ItemStatus = Literal["pending", "running", "completed", "failed"]

T = TypeVar("T")


class Part(TypedDict, total=False):
    """One part of an output item: `type` is text, json, image, video or file; file-like parts carry a signed `url`."""

    type: str
    text: str
    data: Any
    url: str
    mime_type: str
    name: str


class ItemError(TypedDict, total=False):
    message: str
    code: Optional[str]


class OutputItem(TypedDict):
    """One item of a run's output (its `id` is stable across reads and events)."""

    id: str
    item_index: int
    status: ItemStatus
    parts: List[Part]
    error: NotRequired[ItemError]


class NodeUsage(TypedDict):
    """D36: what one I/O node of a run used: provider calls, tokens as reported, cost (USD), items."""

    provider_calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    items_completed: int
    items_failed: int


class RunUsage(TypedDict):
    """D36: what a run used; `by_node` by node id."""

    provider_calls: int
    input_tokens: int
    output_tokens: int
    by_node: Dict[str, NodeUsage]


class WebhookState(TypedDict):
    """D20: how a run's webhook delivery went: `status` pending, delivering, delivered or failed."""

    status: Literal["pending", "delivering", "delivered", "failed"]
    attempts: int
    last_http_status: Optional[int]
    last_error: Optional[str]
    updated_at: Optional[str]


class Run(TypedDict):
    """A run record, as `GET /api/v1/runs/{run_id}` answers it; `output` is keyed by result label."""

    id: str
    status: RunStatus
    published_workflow_id: Optional[str]
    published_workflow_version_id: Optional[str]
    output: Optional[Dict[str, List[OutputItem]]]
    error: Optional[str]
    total_cost: Any
    created_at: str
    completed_at: Optional[str]
    webhook: Optional[WebhookState]
    metadata: Dict[str, str]
    parent_run_id: Optional[str]
    usage: RunUsage


class DeletedRun(TypedDict):
    """The answer of `DELETE /api/v1/runs/{run_id}` (D39)."""

    id: str
    object: str
    deleted: bool


class DeletedFile(TypedDict):
    """The answer of `DELETE /api/v1/files/{file_id}` (D19)."""

    id: str
    object: str
    deleted: bool


class DeletedWorkflow(TypedDict):
    """The answer of `DELETE /api/v1/workflows/{workflow_id}` (D26)."""

    id: str
    object: str
    deleted: bool


class AsyncStart(TypedDict):
    """The 202 answer of a start, with the Idempotency-Key it was sent with (the client's addition)."""

    run_id: str
    status: Literal["pending"]
    published_workflow_id: str
    published_workflow_version_id: str
    created_at: str
    idempotency_key: str


class Page(TypedDict, Generic[T]):
    """A cursor page: pass `last_id` as `starting_after` for the next one while `has_more`."""

    object: Literal["list"]
    data: List[T]
    first_id: Optional[str]
    last_id: Optional[str]
    has_more: bool


class Credits(TypedDict):
    """An account's credit in USD (D17): its balance, what runs in progress hold of it, and the rest."""

    balance_usd: float
    held_usd: float
    available_usd: float


class StorageUse(TypedDict):
    """What one storage quota holds now, and the most it may hold, in bytes."""

    used_bytes: int
    quota_bytes: int


class Account(TypedDict):
    """Your account (D41): its credit and its storage quotas (files and big runs' items; workflow versions)."""

    id: str
    object: str
    name: str
    credits: Credits
    file_storage: StorageUse
    workflow_storage: StorageUse


class File(TypedDict):
    """An uploaded file; `url` is a signed link that works without the API key."""

    id: str
    name: str
    mime_type: str
    size: int
    created_at: str
    url: str


class StreamLink(TypedDict):
    """A signed URL to a run's stream for a browser's EventSource (no API key), and when it stops working."""

    url: str
    expires_at: str


class StreamEvent(TypedDict, total=False):
    """One event of a run's stream: `type` (`response.created`, `response.output_item.added` ...) and `sequence_number`."""

    type: str
    sequence_number: int
    response: Dict[str, Any]
    item: Dict[str, Any]
    output_index: int


class WorkflowContract(TypedDict):
    """A published workflow's inputs (with a JSON Schema) and outputs."""

    workflow_id: str
    slug: Optional[str]
    name: Optional[str]
    version: int
    created_at: str
    version_id: str
    inputs: List[Dict[str, Any]]
    outputs: List[Dict[str, Any]]
    inputs_schema: Dict[str, Any]


TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
TERMINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.cancelled"})
