"""Errors: every error answer of the API is raised as an APIError carrying the envelope's type, code and param."""
from __future__ import annotations

import re
import time
from email.utils import parsedate_to_datetime
from typing import Any, Dict, Mapping, Optional, Type

import httpx


class WrsError(Exception):
    """Base of every exception this package raises."""

    idempotency_key: Optional[str] = None
    """A start's, stream's or re-run's Idempotency-Key (D18), on its errors: a retry with it never starts a second run."""


class APIError(WrsError):
    """An error answer: `status`, and the envelope's `type`, `code`, `param` and `message`."""

    def __init__(
        self,
        status: int,
        type: str,
        message: str,
        code: Optional[str] = None,
        param: Optional[str] = None,
        retry_after: Optional[float] = None,
        request_id: Optional[str] = None,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(f"{status} {type}{f' ({code})' if code else ''}: {message}")
        self.status = status
        self.type = type
        self.message = message
        self.code = code
        self.param = param
        self.retry_after = retry_after
        self.request_id = request_id
        self.body = body

    @property
    def retryable(self) -> bool:
        """A 429 or 503: the same request may succeed later (wait `retry_after` seconds)."""
        return self.status in (429, 503)


class InvalidRequestError(APIError):
    """400 (and 409, 413, 415, 422): the request was refused as it is; `param` names the field."""


class AuthenticationError(APIError):
    """401: missing or invalid API key."""


class NotFoundError(APIError):
    """404: no such object, or not this account's."""


class RateLimitError(APIError):
    """429: wait `retry_after` seconds."""


class ServiceUnavailableError(APIError):
    """A 5xx. A 503: the service's backends are briefly unreachable, retry (`retryable`); wait() also
    tries a proxy's 502 or 504 again, a bounded number of times; a 500 is not retried."""


class WebhookVerificationError(WrsError):
    """A webhook whose signature, timestamp or headers do not verify: do not trust its body."""


class StreamError(WrsError):
    """A stream could not be resumed (no run id yet, or too many failed reconnects)."""


class APIConnectionError(WrsError, httpx.TransportError):
    """
    A start or re-run whose answer was lost (the connection failed after it was sent): the run
    may have started. Retry with `idempotency_key`, which answers with that run if it did and
    starts it if it did not (D18). Also an `httpx.TransportError`; the network error is its `__cause__`.
    """

    def __init__(self, message: str, idempotency_key: str, request: Optional[httpx.Request] = None) -> None:
        super().__init__(message, request=request)
        self.idempotency_key = idempotency_key


def _class_of(status: int) -> Type[APIError]:
    return (
        AuthenticationError
        if status == 401
        else NotFoundError
        if status == 404
        else RateLimitError
        if status == 429
        else ServiceUnavailableError
        if status >= 500
        else InvalidRequestError
        if status in (400, 409, 413, 415, 422)
        else APIError
    )


# The statuses of the error types a stream's `error` event carries (it has no status of its own).
_EVENT_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "not_found_error": 404, "rate_limit_error": 429}


def error_from_event(event: Mapping[str, Any]) -> APIError:
    """The exception of a stream's `error` event (D6 `key_revoked`, D39 `not_found`), whose envelope it carries."""
    envelope = event.get("error") or {}
    kind = envelope.get("type") or "server_error"
    status = _EVENT_STATUS.get(kind, 500)
    return _class_of(status)(status, kind, envelope.get("message") or "the stream reported an error", code=envelope.get("code"), body=dict(event))


def parse_retry_after(header: Optional[str]) -> Optional[float]:
    """
    The seconds a Retry-After header asks for: a non-negative integer, or an HTTP-date (seconds
    until then, 0 once past). Anything else (negative, empty, fractional, text) counts as none.
    """
    value = (header or "").strip()
    if re.fullmatch(r"[0-9]+", value):
        return float(value)
    if not value.endswith("GMT"):
        return None
    try:
        return float(max(0, round(parsedate_to_datetime(value).timestamp() - time.time())))
    except (TypeError, ValueError):
        return None


def error_from_response(response: httpx.Response) -> APIError:
    """Builds the exception for an error answer (its body must have been read)."""
    try:
        body = response.json()
        envelope = body.get("error", {}) if isinstance(body, dict) else {}
    except ValueError:
        body, envelope = None, {}
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    status = response.status_code
    return _class_of(status)(
        status,
        envelope.get("type") or ("server_error" if status >= 500 else "invalid_request_error"),
        envelope.get("message") or f"HTTP {status}",
        code=envelope.get("code"),
        param=envelope.get("param"),
        retry_after=retry_after,
        request_id=response.headers.get("x-request-id"),
        body=body if isinstance(body, dict) else None,
    )
