"""Request tags: how the summarizer's own requests say they are summarization traffic.

Two carriers, both optional:

* an HTTP header, ``X-Progsum-Tag: <tag>`` with ``X-Progsum-Task: summarize|consolidate``, on by
  default: gateways and proxies in front of the provider (and your own HTTP logs) can group by it;
* Anthropic's ``metadata.user_id``, off by default: the only per-request metadata the Messages API
  takes. The API reference describes it as an external identifier of the end user, "a uuid, hash
  value, or other opaque identifier", used to help detect abuse, never a name, email address or
  phone number, at most 512 characters. Give an opaque id of the summarizing service there only
  if that is how your organisation separates traffic.

Anthropic's Console separates usage by API key and workspace, so a dedicated key remains the way
to see summarization apart there (docs/observability.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from progsum.errors import ConfigError

__all__ = ["DEFAULT_TAG", "TAG_HEADER", "TASK_HEADER", "check_tag", "check_user_id", "tag_fields"]

DEFAULT_TAG = "progsum-summarizer"
"""The ``X-Progsum-Tag`` value unless the summarizer is given another (None: no header)."""
TAG_HEADER = "X-Progsum-Tag"
TASK_HEADER = "X-Progsum-Task"
USER_ID_MAX = 512
"""Longest ``metadata.user_id`` the Messages API accepts."""

_TOKEN = re.compile(r"[A-Za-z0-9._~:/+=-]{1,128}")
_IDENTIFYING = re.compile(r"@|\+?\d[\d ().-]{7,}\d|\s")


def check_tag(tag: str | None) -> str | None:
    """``tag`` if it is a short header-safe token, else a ConfigError naming the fix."""
    if tag is None:
        return None
    if not isinstance(tag, str) or not _TOKEN.fullmatch(tag):
        raise ConfigError(
            f"tag={tag!r} must be 1-128 characters of letters, digits and ._~:/+=- (it is sent "
            f"as the {TAG_HEADER} header), e.g. tag='support-bot-summarizer', or None for no tag"
        )
    return tag


def check_user_id(user_id: str | None) -> str | None:
    """``user_id`` if it is an opaque id the Messages API accepts, else a ConfigError."""
    if user_id is None:
        return None
    if not isinstance(user_id, str) or not 0 < len(user_id) <= USER_ID_MAX:
        raise ConfigError(
            f"user_id={user_id!r} must be a string of 1-{USER_ID_MAX} characters (Anthropic's "
            "metadata.user_id), e.g. a uuid or hash naming the summarizing service"
        )
    if _IDENTIFYING.search(user_id):
        raise ConfigError(
            f"user_id={user_id!r} looks like a name, email address or phone number; Anthropic's "
            "metadata.user_id must be an opaque identifier (a uuid or hash), so pass e.g. "
            "user_id=hashlib.sha256(b'summarizer').hexdigest()"
        )
    return user_id


def tag_fields(
    tag: str | None,
    user_id: str | None,
    *,
    task: str,
    anthropic: bool,
    given: Mapping[str, Any],
) -> dict[str, Any]:
    """The create-call fields that tag one request; ``given`` (create_kwargs) wins per header.

    ``metadata`` goes only to Anthropic-provider clients (other providers define no such field).
    """
    fields: dict[str, Any] = {}
    if tag is not None:
        headers = {TAG_HEADER: tag, TASK_HEADER: task}
        headers.update(given.get("extra_headers") or {})
        fields["extra_headers"] = headers
    if user_id is not None and anthropic and "metadata" not in given:
        fields["metadata"] = {"user_id": user_id}
    return fields
