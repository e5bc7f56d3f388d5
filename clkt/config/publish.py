"""`[publish]`: publishing snapshots, their reports and everything behind every score to a Hugging Face Hub
dataset repo (`clkt.publish`).

The token never lives here: `token_env` names the environment variable that holds it (read once by the
loader, registered for redaction). `repo` set with `on_freeze` or `on_report` makes the daemon publish by
itself; `clkt snapshot publish` works with or without them.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from clkt.config._base import Section

__all__ = ["REPO_ID_PATTERN", "PublishSettings", "check_branch", "check_repo_id"]

# what the Hub accepts as `owner/name` (its own rule: letters, digits, `-`, `_`, `.`; no `--` or `..`, no leading or
# trailing `-`/`.`; at most 96 characters a part)
REPO_ID_PATTERN = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/"
                             r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_BRANCH = re.compile(r"^(?!.*\.\.)(?!/)(?!.*//)[A-Za-z0-9._/-]{1,128}(?<!/)(?<!\.lock)$")


def check_repo_id(value: str) -> str:
    """`value` if it is a Hub repo id `owner/name`, else `ValueError` saying what it should be."""
    if not isinstance(value, str) or not REPO_ID_PATTERN.fullmatch(value):
        raise ValueError(f"{str(value)[:120]!r} is not a Hub repo id of the form owner/name "
                         "(letters, digits, '-', '_', '.'; e.g. my-lab/clkt-benchmark)")
    return value


def check_branch(value: str) -> str:
    """`value` if it is a usable branch name (the Hub `revision` a publish commits to), else `ValueError`."""
    if not isinstance(value, str) or not _BRANCH.fullmatch(value):
        raise ValueError(f"{str(value)[:120]!r} is not a branch name (letters, digits, '.', '_', '-', '/')")
    return value


class PublishSettings(Section):
    """Publishing snapshots, their reports and everything behind every score to a Hub dataset repo (`clkt.publish`)."""

    # the dataset repo `owner/name`; None: nothing is published by the daemon (`clkt snapshot publish --repo` still works)
    repo: str | None = None
    private: bool = False  # a repo the publisher creates is private (an existing repo keeps its visibility)
    revision: str = "main"  # the Hub branch every commit goes to (created from main when missing)
    on_freeze: bool = False  # the daemon publishes each snapshot as it freezes (without a report yet)
    on_report: bool = False  # ... and again once its report is written (or first then)
    # what a publish revision holds beside the `hf/` export and its card
    include_report: bool = True  # metrics JSON, CSVs, heatmaps, the Markdown report (recomputed minus retractions)
    include_predictions: bool = True  # every job's answer to every question, per variant and scorer
    include_configs: bool = True  # every job's config: strategy, LoRA settings, seeds, summary, library versions
    include_adapters: bool = False  # the best epoch's LoRA adapter of every LoRA job (found on this machine)
    # the newest N frozen snapshots of the spec keep their test questions and answers back (0: none held)
    hold_back_periods: int = Field(default=1, ge=0, le=120)
    hold_documents: bool = True  # ignored since issue 35: a held snapshot publishes no document (nor any question)
    token_env: str = Field(default="HF_TOKEN", pattern=_ENV_NAME)  # the environment variable with the Hub token
    endpoint: str | None = Field(default=None, max_length=512)  # None: huggingface_hub's own (HF_ENDPOINT or the Hub)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)  # one HTTP request to the Hub
    max_attempts: int = Field(default=5, ge=1, le=100)  # tries of a publish that fails for another reason than the Hub
    backoff_start_s: float = Field(default=30.0, gt=0, le=86400)  # the Hub down: first wait, doubling ...
    backoff_max_s: float = Field(default=3600.0, gt=0, le=7 * 86400)  # ... up to this (never given up)
    check_interval_s: float = Field(default=60.0, gt=0, le=86400)  # how often the daemon looks for what to republish

    @field_validator("repo")
    @classmethod
    def _repo(cls, v: str | None) -> str | None:
        return None if v is None else check_repo_id(v)

    @field_validator("revision")
    @classmethod
    def _revision(cls, v: str) -> str:
        return check_branch(v)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        if v is None:
            return None
        if not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?", v):
            raise ValueError("must be an http(s) URL such as https://huggingface.co")
        return v.rstrip("/")

    @model_validator(mode="after")
    def _automatic_needs_a_repo(self) -> PublishSettings:
        if (self.on_freeze or self.on_report) and self.repo is None:
            raise ValueError("on_freeze / on_report publish to `repo`: set publish.repo (owner/name)")
        if self.backoff_max_s < self.backoff_start_s:
            raise ValueError("backoff_max_s must be >= backoff_start_s")
        return self

    @property
    def automatic(self) -> bool:
        """The daemon publishes by itself."""
        return self.repo is not None and (self.on_freeze or self.on_report)
