"""Webhook verification (Standard Webhooks, the `standardwebhooks` package): the run record, once its signature holds."""
from __future__ import annotations

from typing import Mapping, Union, cast

from standardwebhooks.webhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as _LibraryError

from ._errors import WebhookVerificationError
from ._types import Run


def verify_webhook(payload: Union[bytes, str], headers: Mapping[str, str], secret: str) -> Run:
    """
    Checks `webhook-id`, `webhook-timestamp` (within 5 minutes) and `webhook-signature` against your
    account's `whsec_...` secret and returns the run record the body carries. Pass the raw body,
    before any JSON parsing. Raises WebhookVerificationError when it does not verify.
    """
    try:
        return cast(Run, Webhook(secret).verify(payload, dict(headers)))
    except _LibraryError as err:
        raise WebhookVerificationError(str(err)) from err
