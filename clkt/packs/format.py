"""The result pack's public format, version `FORMAT_VERSION`: what `clkt evaluate` writes and `clkt submit` reads.

A pack is a folder (or a `.tar.gz` archive of one, `clkt.packs.archive`) of three files, and a fourth when the
snapshot's locality split had questions for the target:

```
manifest.json       PackManifest: the format and its version, the snapshot (id, content sha256), the model
                    (path or Hub id, revision or weights sha256, kind, declared cutoff), the strategy (its
                    settings, which of them were overridden), clkt's version, the environment (python, torch,
                    transformers, peft, device), and the sha256 and size of every other file
predictions.jsonl   PredictionRow, one line per (train language, scorer, variant, test language, question)
metrics.json        PackMetrics, computed from the answers alone (`clkt.packs.metrics`)
locality.jsonl      optional: LocalityRow, one line per (train language, scorer, variant, test language, locality
                    question): the locality split's answers (questions about entities the target knew before
                    injection), from which metrics.json's kept % is computed; absent: no locality figure
open_answers.jsonl  optional (version 2; the snapshot has an open track): OpenAnswerRow, one line per (train language,
                    variant, split, test language, open question): the model's short answers to the snapshot's open
                    questions (`open/<lang>.jsonl`: test and control splits, and the locality split's about entities
                    the target knew), base and injected, the text only: no verdict (the taker scores them itself with
                    its normaliser, `clkt.packs.open_answers`); absent: "no open track"
probe.jsonl         optional (`clkt evaluate --probe`): ProbeRow, one line per (real entity of the snapshot, language):
                    the model's answer to the recognition probe ("Provide a brief factual summary of '<name>'.",
                    `clkt.targets.summary`), never a verdict: the service that takes the pack in judges the answers
                    itself and excludes the entities the model knew (`clkt.packs.probe`); absent: "not probed here"
```

The locality answers are a file of their own, listed in the manifest like the others, so `predictions.jsonl`
keeps meaning "every test answer" (what a reader computes accuracy from) and a version-1 reader that does not know
the file still reads the pack (it checks the file's hash and reads no further). `probe.jsonl` was added the same
way, within version 1: a reader that does not know it checks its hash and scores the pack unprobed.

Version 2 added `open_answers.jsonl` (and metrics.json's `open`: the lab's open figures, only compared by the
taker): a reader of version 2 reads every version-1 pack as "no open track", and refuses a version-1 manifest that
lists the file. An answer is at most `OPEN_ANSWER_MAX_CHARS` characters (what a job keeps of one: the stop rule
keeps one line of at most 32 new tokens), the file at most `OPEN_MAX_BYTES`: a longer answer is refused with its
line, never cut (a cut answer would be scored on other text than the model said), and a larger file before it is
read.

The pack's identity (`pack_sha256`) is the sha256 of its `manifest.json` bytes, which name the other files'
hashes: the same pack as a folder or as an archive has one identity. The contract is versioned: a reader of
version N reads every pack of version <= N and refuses a newer one with one line; fields may be added in a new
version, never renamed.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "LOCALITY_FILE",
    "LOCALITY_SPLIT",
    "MANIFEST_FILE",
    "METRICS_FILE",
    "OPEN_ANSWER_MAX_CHARS",
    "OPEN_FILE",
    "OPEN_FILE_VERSION",
    "OPEN_MAX_BYTES",
    "OPTIONAL_FILES",
    "PACK_FILES",
    "PREDICTIONS_FILE",
    "PROBE_FILE",
    "PROBE_MAX_BYTES",
    "PROBE_SUMMARY_MAX_CHARS",
    "EnvironmentInfo",
    "FileEntry",
    "LocalityRow",
    "ModelIdentity",
    "OpenAnswerRow",
    "PackManifest",
    "PredictionRow",
    "ProbeRow",
    "SnapshotRef",
    "StrategyInfo",
]

FORMAT_NAME: Literal["clkt-result-pack"] = "clkt-result-pack"  # manifest.json's `format`
FORMAT_VERSION = 2  # manifest.json's `format_version`: a reader refuses a newer one (2: `open_answers.jsonl`)
MANIFEST_FILE = "manifest.json"
PREDICTIONS_FILE = "predictions.jsonl"
METRICS_FILE = "metrics.json"
LOCALITY_FILE = "locality.jsonl"
PROBE_FILE = "probe.jsonl"
OPEN_FILE = "open_answers.jsonl"
OPEN_FILE_VERSION = 2  # the format version that added `OPEN_FILE`: an older manifest listing it is refused
OPEN_MAX_BYTES = 32 << 20  # a larger open_answers.jsonl is refused before it is read
OPEN_ANSWER_MAX_CHARS = 500  # one answer's text: what a job keeps of one (`clkt.openqa.results.MAX_ANSWER_CHARS`)
PROBE_MAX_BYTES = 8 << 20  # a larger probe.jsonl is refused before it is read (about 12 languages x 1,000 entities)
PROBE_SUMMARY_MAX_CHARS = 4000  # one answer (the daemon asks for at most 1,024 new tokens; 96 by default)
PACK_FILES = (MANIFEST_FILE, PREDICTIONS_FILE, METRICS_FILE)  # a pack holds these, and only `OPTIONAL_FILES` besides
OPTIONAL_FILES = (LOCALITY_FILE, PROBE_FILE, OPEN_FILE)  # each listed and hashed in the manifest when present
LOCALITY_SPLIT = "locality"  # `LocalityRow.split` (`clkt.evaluate.results.LOCALITY_SPLIT`)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SnapshotRef(_Model):
    """The snapshot the pack answers (its frozen manifest's id and content hash)."""

    id: str
    content_sha256: str
    spec: str
    period: str
    period_start: str  # ISO date: the window rule reads it
    languages: list[str]


class ModelIdentity(_Model):
    """Which model was measured: `model` as given (a local path, a Hub id, `embedded:<name>`), with the revision
    it resolved to (a Hub commit, a bundled package's version) or, for a local folder, the sha256 of its weights."""

    name: str
    model: str
    kind: Literal["base", "instruct"]
    revision: str | None = None
    weights_sha256: str | None = None
    cutoff: date | None = None  # the declared knowledge cutoff: `clkt submit` refuses a pack without one


class StrategyInfo(_Model):
    """The injection: its strategy, train languages and every setting the job ran with (`[gpu]`'s job fields);
    `overridden`: the settings given on the command line, each with the config's value it replaced."""

    name: str
    train_languages: list[str]
    settings: dict[str, object]
    overridden: dict[str, object] = Field(default_factory=dict)


class EnvironmentInfo(_Model):
    python: str
    platform: str
    torch: str | None = None
    transformers: str | None = None
    peft: str | None = None
    device: str = ""


class FileEntry(_Model):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class PackManifest(_Model):
    format: Literal["clkt-result-pack"] = FORMAT_NAME
    format_version: int = FORMAT_VERSION
    created_at: str
    clkt_version: str
    snapshot: SnapshotRef
    model: ModelIdentity
    strategy: StrategyInfo
    environment: EnvironmentInfo
    scorers: list[str]
    files: dict[str, FileEntry]  # every file of the pack but manifest.json
    # the prompt the open answers were generated with (`clkt.openqa.prompts.ANSWER_PROMPT_VERSION`): what
    # `clkt submit --reproduce` re-generates them with; absent without open answers (or from a pack made before it
    # was recorded: its open answers cannot be re-generated, so its open rows are never reproduced)
    open_prompt_version: str | None = Field(default=None, exclude_if=lambda v: v is None)


class PredictionRow(_Model):
    """One answer: the injected (or base) model of the job trained in `train_lang`, scored by `scorer`, asked the
    snapshot's test question `qid` (its public id, as in the snapshot's files) in `lang`."""

    train_lang: str
    scorer: str
    variant: Literal["base", "injected"]
    lang: str
    qid: int
    entity_id: int
    domain: str
    predicted: str | None  # the letter chosen (A-D), None when none could be read
    correct: bool
    raw: str = ""


class LocalityRow(PredictionRow):
    """One answer to a question of the snapshot's locality split (an entity the target knew before injection; never
    trained on, never scored as transfer): the fields of a `PredictionRow`, and the split it belongs to."""

    split: Literal["locality"]


class ProbeRow(_Model):
    """The model's answer to the recognition probe about the snapshot's entity `entity_id` (its public id) asked in
    `lang`: what it said, never whether that shows it knew the entity (the taker judges it)."""

    entity_id: int
    lang: str = Field(min_length=2, max_length=8)
    summary: str = Field(max_length=PROBE_SUMMARY_MAX_CHARS)


class OpenAnswerRow(_Model):
    """The answer of the base or injected model of the job trained in `train_lang` to the snapshot's open question
    `qid` (its public id, as in `open/<lang>.jsonl`) of `split` asked in `lang`: what it said, never whether that is
    right (the taker scores it with its own normaliser)."""

    train_lang: str = Field(min_length=2, max_length=8)
    variant: Literal["base", "injected"]
    split: Literal["test", "control", "locality"]
    lang: str = Field(min_length=2, max_length=8)
    qid: int
    entity_id: int
    answer: str = Field(max_length=OPEN_ANSWER_MAX_CHARS)
