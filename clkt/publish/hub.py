"""The Hub client: the few `huggingface_hub` calls publishing makes, with the library's errors translated at the
edge into `HubError`s that carry the policy (`transient`: the Hub is down or busy, try again later and spend no
attempt; otherwise it refused, and trying again will not help).

Every call goes to `endpoint` (huggingface_hub's own default when None: `HF_ENDPOINT` or the Hub), and nothing
else does (the library's telemetry is turned off: see `HubClient`), with the token given explicitly (never the
token saved by `huggingface-cli login`, never logged). A commit is one
`create_commit`: the Hub applies it whole or not at all. `parent` makes it fail (HTTP 412, transient here) when the
branch moved since it was read, so a commit built on an older head never lands.

The calls are synchronous (huggingface_hub is); `clkt.publish.publisher` runs them in a thread with a deadline.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx2
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, constants, get_session
from huggingface_hub.errors import (
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile
from pydantic import SecretStr

from clkt.errors import ClktError
from clkt.logs import redact

__all__ = ["HubClient", "HubCommit", "HubError", "HubFile", "HubOffline", "HubRefused", "HubUnavailable"]

REPO_TYPE = "dataset"


class HubError(ClktError):
    """The Hub failed a call. `transient`: it did not answer, or asked to wait (`retry_after_s`)."""

    transient = False

    def __init__(self, message: str, *, status: int | None = None, retry_after_s: float | None = None) -> None:
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(redact(message))


class HubUnavailable(HubError):
    """No answer, a 5xx, 429, or the branch moved under us (412/409): nothing was committed by this call, or what
    was is visible in the history the next try reads."""

    transient = True


class HubOffline(HubUnavailable):
    """huggingface_hub is in offline mode (`HF_HUB_OFFLINE=1`): it refuses every request until restarted without it."""


class HubRefused(HubError):
    """The Hub refused the call (a bad token, no write access, an invalid card): trying again will not help."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HubFile:
    path: str
    size: int
    oid: str  # the git blob id


@dataclass(frozen=True, slots=True, kw_only=True)
class HubCommit:
    oid: str
    title: str
    message: str
    created_at: datetime


def _retry_after(resp: httpx2.Response | None) -> float | None:
    """The seconds a `Retry-After` header asks for (its HTTP-date form is left to the backoff)."""
    value = (resp.headers.get("Retry-After") or "").strip() if resp is not None else ""
    return float(value) if value.isdigit() else None


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:300] if lines else ""


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """huggingface_hub's and httpx2's errors as `HubError`s naming `what` was being done."""
    try:
        yield
    except OfflineModeIsEnabled as e:
        raise HubOffline(f"{what}: huggingface_hub is in offline mode (HF_HUB_OFFLINE is set): publishing needs the "
                         "Hub; run without HF_HUB_OFFLINE") from e
    except RepositoryNotFoundError as e:
        status = e.response.status_code if e.response is not None else None
        raise HubRefused(f"{what}: the repo does not exist or the token may not access it (HTTP {status})",
                         status=status) from e
    except RevisionNotFoundError as e:
        raise HubRefused(f"{what}: no such branch on the Hub", status=404) from e
    except HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else None
        detail = _first_line(e.server_message or "") or _first_line(str(e))
        if status is not None and (status >= 500 or status in (408, 409, 412, 423, 429)):
            raise HubUnavailable(f"{what}: the Hub answered HTTP {status}: {detail}", status=status,
                                 retry_after_s=_retry_after(e.response)) from e
        if status in (401, 403):
            raise HubRefused(f"{what}: the Hub refused the token (HTTP {status}): {detail}", status=status) from e
        raise HubRefused(f"{what}: the Hub answered HTTP {status}: {detail}", status=status) from e
    except httpx2.TimeoutException as e:
        raise HubUnavailable(f"{what}: the Hub did not answer in time ({type(e).__name__})") from e
    except httpx2.TransportError as e:
        raise HubUnavailable(f"{what}: the Hub could not be reached ({type(e).__name__}: {_first_line(str(e))})") from e
    except ValueError as e:  # what the library checks before sending: e.g. invalid metadata in a README.md
        raise HubRefused(f"{what}: {_first_line(str(e))}") from e


class HubClient:
    """One dataset repo on one Hub endpoint, with one token."""

    def __init__(self, *, repo_id: str, token: SecretStr, endpoint: str | None, timeout_s: float) -> None:
        # huggingface_hub's telemetry off (as HF_HUB_DISABLE_TELEMETRY=1 does): it would otherwise fetch an "agent
        # harnesses" registry from its default endpoint (huggingface.co, whatever `endpoint` is) to build its
        # User-Agent; with it off, every request goes to `endpoint` and nowhere else
        constants.HF_HUB_DISABLE_TELEMETRY = True
        self.repo_id = repo_id
        self.timeout_s = timeout_s
        self._token = token
        self._api = HfApi(endpoint=endpoint, library_name="clkt")
        self.endpoint = self._api.endpoint

    def _tok(self) -> str:
        if constants.is_offline_mode():
            raise HubOffline("huggingface_hub is in offline mode (HF_HUB_OFFLINE is set): publishing needs the Hub; "
                             "run without HF_HUB_OFFLINE")
        get_session().timeout = httpx2.Timeout(self.timeout_s)  # the shared client has none by default
        return self._token.get_secret_value()

    def repo_private(self) -> bool | None:
        """Whether the repo is private; None when it does not exist (or the token cannot see it)."""
        token = self._tok()
        with _translated(f"reading {self.repo_id}"):
            try:
                return bool(self._api.dataset_info(self.repo_id, token=token, timeout=self.timeout_s).private)
            except RepositoryNotFoundError:
                return None

    def create_repo(self, *, private: bool) -> None:
        token = self._tok()
        with _translated(f"creating {self.repo_id}"):
            self._api.create_repo(self.repo_id, token=token, repo_type=REPO_TYPE, private=private, exist_ok=True)

    def ensure_branch(self, branch: str) -> None:
        """`branch` exists (created from main's head when missing)."""
        if branch == constants.DEFAULT_REVISION:
            return
        token = self._tok()
        with _translated(f"creating the branch {branch} of {self.repo_id}"):
            self._api.create_branch(self.repo_id, branch=branch, token=token, repo_type=REPO_TYPE, exist_ok=True)

    def history(self, branch: str) -> list[HubCommit]:
        """The branch's commits, newest first."""
        token = self._tok()
        with _translated(f"reading the history of {self.repo_id}@{branch}"):
            return [
                HubCommit(oid=c.commit_id, title=c.title or "", message=c.message or "", created_at=c.created_at)
                for c in self._api.list_repo_commits(self.repo_id, repo_type=REPO_TYPE, revision=branch, token=token)
            ]

    def files(self, branch: str) -> dict[str, HubFile]:
        """Every file of the branch (path -> size and blob id)."""
        token = self._tok()
        with _translated(f"listing the files of {self.repo_id}@{branch}"):
            try:
                entries = list(self._api.list_repo_tree(self.repo_id, recursive=True, repo_type=REPO_TYPE,
                                                        revision=branch, token=token))
            except RemoteEntryNotFoundError:
                return {}
        return {e.path: HubFile(path=e.path, size=e.size, oid=e.blob_id) for e in entries if isinstance(e, RepoFile)}

    def commit(
        self, *, branch: str, additions: Sequence[tuple[str, Path]], deletions: Sequence[str], title: str,
        description: str, parent: str | None,
    ) -> str:
        """One commit of every addition (path in the repo, local file) and deletion; its oid."""
        token = self._tok()
        ops: list[CommitOperationAdd | CommitOperationDelete] = [
            CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(local)) for path, local in additions
        ]
        ops += [CommitOperationDelete(path_in_repo=path) for path in deletions]
        with _translated(f"committing to {self.repo_id}@{branch}"):
            info = self._api.create_commit(
                self.repo_id, ops, commit_message=title, commit_description=description, token=token,
                repo_type=REPO_TYPE, revision=branch, parent_commit=parent,
            )
        return str(info.oid)
