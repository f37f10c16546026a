"""Python client of the Workflow Run Service (sync and asyncio, on httpx)."""
from ._client import AsyncWrsClient, WrsClient
from ._errors import (
    APIError,
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    ServiceUnavailableError,
    StreamError,
    WebhookVerificationError,
    WrsError,
)
from ._types import Account, AsyncStart, Credits, StorageUse, DeletedFile, DeletedRun, DeletedWorkflow, File, NodeUsage, OutputItem, Page, Part, Run, RunStatus, RunUsage, StreamEvent, StreamLink, WorkflowContract
from .webhooks import verify_webhook

__all__ = [
    "WrsClient",
    "AsyncWrsClient",
    "verify_webhook",
    "WrsError",
    "APIError",
    "AuthenticationError",
    "InvalidRequestError",
    "NotFoundError",
    "RateLimitError",
    "ServiceUnavailableError",
    "StreamError",
    "WebhookVerificationError",
    "Account",
    "AsyncStart",
    "Credits",
    "StorageUse",
    "DeletedFile",
    "DeletedWorkflow",
    "DeletedRun",
    "File",
    "NodeUsage",
    "OutputItem",
    "Page",
    "Part",
    "Run",
    "RunStatus",
    "RunUsage",
    "StreamEvent",
    "StreamLink",
    "WorkflowContract",
]
