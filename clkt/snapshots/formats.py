"""Writers of a snapshot's files in each export format, into a directory the caller owns.

- native: `docs/<lang>.jsonl`, `questions/<lang>.jsonl` (see `layout`)
- reference: the reference implementation's layout, per train language `reference/<train_lang>/`
  `train_doc.jsonl` (`text`, `source`), `val_mc.jsonl` (the validation questions in every language, as the
  reference layout has them: the train language's rows choose the checkpoint, the others ride along) and
  `test_mc.jsonl` (the test questions in every language, the train language included: the contingency table
  needs both)
- hf: `data/<config>-<split>.jsonl` + a card whose `configs:` YAML makes `datasets.load_dataset(dir, config)`
  work offline; configs `qa_<lang>` (validation, test), `docs_<lang>` (train) and, with an open track,
  `open_<lang>` (validation, test: the short-answer questions, gold and aliases)
- lm-eval: one lm-evaluation-harness task per language on the test questions, a group over them, and a
  loader module next to the YAML so the folder can be moved (`lm_eval --include_path DIR --tasks NAME`); with an
  open track, a `generate_until` task `<task>_open` per language (`OPEN_TASK_SUFFIX`): the base-model few-shot
  frame of `clkt.openqa.prompts` as the prompt, greedy, stopped at the first line break within
  `MAX_NEW_TOKENS`, scored by lm-eval's `exact_match` against the gold and every alias (case and punctuation
  ignored): a lower bound of clkt's normaliser, which also reads numbers, dates, scripts and the answer's language

Every writer returns the relative paths it wrote; bytes depend only on the content (sorted keys, LF).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from clkt.documents.answer_cues import answer_cue
from clkt.openqa.prompts import MAX_NEW_TOKENS, open_text
from clkt.snapshots.content import SnapshotContent, canonical_json
from clkt.snapshots.layout import FACTS_FILE, LETTERS, OpenRow, QuestionRow, docs_path, dumps_row, questions_path

__all__ = [
    "FORMATS",
    "OPEN_TASK_SUFFIX",
    "OPTIONS_TASK_SUFFIX",
    "lm_eval_task_name",
    "mc_prompt",
    "write_hf",
    "write_lm_eval",
    "write_native",
    "write_reference",
    "write_text",
]

FORMATS = ("native", "reference", "hf", "lm-eval")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def _jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    write_text(path, "".join(canonical_json(r) + "\n" for r in rows))


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def mc_prompt(q: QuestionRow) -> str:
    """The reference implementation's question field: the question and its options as '- A. …' lines."""
    return q.question + "\n" + "\n".join(f"- {LETTERS[i]}. {opt}" for i, opt in enumerate(q.options))


def write_native(content: SnapshotContent, root: Path) -> list[str]:
    out: list[str] = []
    for lang in content.languages:
        p = docs_path(root, lang)
        write_text(p, "".join(dumps_row(d) + "\n" for d in content.docs_in(lang)))
        out.append(_rel(root, p))
        p = questions_path(root, lang)
        write_text(p, "".join(dumps_row(q) + "\n" for q in content.questions_in(lang)))
        out.append(_rel(root, p))
    if content.facts:  # the entities' facts: for knowledge editing only, never in an export nor published
        write_text(root / FACTS_FILE, "".join(dumps_row(f) + "\n" for f in content.facts))
        out.append(FACTS_FILE)
    return out


def _mc_row(q: QuestionRow, train_lang: str) -> dict[str, object]:
    return {
        "question": mc_prompt(q), "answer": q.answer, "text_answer": q.options[q.answer_index],
        "train_lang": train_lang, "test_lang": q.lang, "source": q.domain, "qid": q.qid,
        "answer_index": q.answer_index, "entity_id": q.entity_id, "origin": q.source, "split": q.split,
    }


def write_reference(content: SnapshotContent, root: Path, *, prefix: str = "reference") -> list[str]:
    out: list[str] = []
    for train in content.languages:
        base = root / prefix / train if prefix else root / train
        docs = [
            {"text": d.text, "source": d.domain, "entity_id": d.entity_id, "name": d.name, "origin": d.source}
            for d in content.docs_in(train)
        ]
        _jsonl(base / "train_doc.jsonl", docs)
        val = [_mc_row(q, train) for lang in content.languages for q in content.questions_in(lang, "val")]
        _jsonl(base / "val_mc.jsonl", val)
        test: list[dict[str, object]] = []
        for lang in content.languages:
            test.extend(_mc_row(q, train) for q in content.questions_in(lang, "test"))
        _jsonl(base / "test_mc.jsonl", test)
        out += [_rel(root, base / n) for n in ("train_doc.jsonl", "val_mc.jsonl", "test_mc.jsonl")]
    return out


# the open rows' columns as the datasets card declares them (`OpenRow`; "list": a sequence of strings)
_OPEN_FEATURES = (("qid", "int64"), ("entity_id", "int64"), ("domain", "string"), ("source", "string"),
                  ("lang", "string"), ("split", "string"), ("fact", "string"), ("kind", "string"),
                  ("question", "string"), ("answer", "string"), ("aliases", "list"))


def _hf_card(content: SnapshotContent, configs: list[tuple[str, list[tuple[str, str]]]], card_body: str) -> str:
    lines = ["---", "configs:"]
    for i, (name, files) in enumerate(configs):
        lines.append(f"- config_name: {name}")
        lines.append("  data_files:")
        for split, path in files:
            lines.append(f"  - split: {split}")
            lines.append(f"    path: {path}")
        if i == 0:
            lines.append("  default: true")
    open_configs = [name for name, _ in configs if name.startswith("open_")]
    if open_configs:  # declared, not inferred: a split whose rows all lack aliases would read them as nulls
        lines.append("dataset_info:")
        for name in open_configs:
            lines += [f"- config_name: {name}", "  features:"]
            for field, dtype in _OPEN_FEATURES:
                lines += [f"  - name: {field}", f"    {'sequence' if dtype == 'list' else 'dtype'}: "
                                                   f"{'string' if dtype == 'list' else dtype}"]
    tasks = ["- multiple-choice", *(["- question-answering"] if content.open_questions else [])]
    lines += ["language:", *[f"- {lang}" for lang in content.languages], "task_categories:", *tasks, "---", ""]
    return "\n".join(lines) + card_body


def write_hf(content: SnapshotContent, root: Path, *, card_body: str, prefix: str = "hf") -> list[str]:
    base = root / prefix if prefix else root
    out: list[str] = []
    configs: list[tuple[str, list[tuple[str, str]]]] = []
    for lang in content.languages:
        files: list[tuple[str, str]] = []
        for split, hf_split in (("val", "validation"), ("test", "test")):
            rows = content.questions_in(lang, split)
            if not rows:  # an empty JSON file cannot be loaded; the split is left out
                continue
            rel = f"data/qa_{lang}-{hf_split}.jsonl"
            _jsonl(base / rel, [{**r.model_dump(mode="json"), "text_answer": r.options[r.answer_index]} for r in rows])
            files.append((hf_split, rel))
            out.append(_rel(root, base / rel))
        configs.append((f"qa_{lang}", files))
    for lang in content.languages:  # the open track's short-answer questions (validation: a validation MCQ's fact)
        open_files: list[tuple[str, str]] = []
        for split, hf_split in (("val", "validation"), ("test", "test")):
            rows_open = [r for r in content.open_in(lang) if r.split == split]
            if not rows_open:
                continue
            rel = f"data/open_{lang}-{hf_split}.jsonl"
            _jsonl(base / rel, [r.model_dump(mode="json") for r in rows_open])
            open_files.append((hf_split, rel))
            out.append(_rel(root, base / rel))
        if open_files:
            configs.append((f"open_{lang}", open_files))
    for lang in content.languages:
        rel = f"data/docs_{lang}-train.jsonl"
        _jsonl(base / rel, [d.model_dump(mode="json") for d in content.docs_in(lang)])
        configs.append((f"docs_{lang}", [("train", rel)]))
        out.append(_rel(root, base / rel))
    write_text(base / "README.md", _hf_card(content, configs, card_body))
    out.append(_rel(root, base / "README.md"))
    return out


def lm_eval_task_name(content: SnapshotContent, lang: str | None = None) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", f"clkt_{content.spec}_{content.period}".lower()).strip("_")
    return f"{stem}_{lang}" if lang else stem


_LOADER = '''"""Loads this folder's test questions for lm-evaluation-harness (written by clkt; no network)."""

from pathlib import Path

import datasets

_HERE = Path(__file__).resolve().parent


def load(lang=None, **_kwargs):
    return datasets.load_dataset("json", data_files={"test": str(_HERE / "data" / f"{lang}-test.jsonl")})


def load_open(lang=None, **_kwargs):
    return datasets.load_dataset("json", data_files={"test": str(_HERE / "data" / f"open-{lang}-test.jsonl")})
'''

_TASK = """task: {task}
tag: {group}
custom_dataset: !function clkt_lmeval.load
dataset_kwargs:
  lang: {lang}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}\\nAnswer:"
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: answer_index
target_delimiter: " "
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
  snapshot: {snapshot}
"""


# `option-loglik` as lm-eval computes it: the options' own text after the bare question and the answer cue
# (`clkt.evaluate.loglik`, base models), `acc` and the per-character `acc_norm`.
_OPTIONS_TASK = """task: {task}
tag: {group}
custom_dataset: !function clkt_lmeval.load
dataset_kwargs:
  lang: {lang}
test_split: test
output_type: multiple_choice
doc_to_text: {text}
doc_to_choice: "{{{{options}}}}"
doc_to_target: answer_index
target_delimiter: " "
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
  snapshot: {snapshot}
"""

OPTIONS_TASK_SUFFIX = "_options"
OPEN_TASK_SUFFIX = "_open"

# the open track: the prompt is each row's `prompt` (clkt's few-shot frame), the targets its gold and aliases
_OPEN_TASK = """task: {task}
tag: {group}
custom_dataset: !function clkt_lmeval.load_open
dataset_kwargs:
  lang: {lang}
test_split: test
output_type: generate_until
doc_to_text: "{{{{prompt}}}}"
doc_to_target: "{{{{golds}}}}"
generation_kwargs:
  until:
    - "\\n"
  max_gen_toks: {max_tokens}
  do_sample: false
  temperature: 0.0
filter_list:
  - name: strip
    filter:
      - function: remove_whitespace
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: true
metadata:
  version: 1.0
  snapshot: {snapshot}
"""


def _open_row(r: OpenRow) -> dict[str, object]:
    return {**r.model_dump(mode="json"), "prompt": open_text(r.question, r.lang, chat=False),
            "golds": [r.answer, *r.aliases]}


def _write_open_tasks(content: SnapshotContent, root: Path, base: Path, lang: str) -> list[str]:
    """The `generate_until` task of `lang`'s open questions and its rows (nothing without any)."""
    rows = [r for r in content.open_in(lang) if r.split == "test"]
    if not rows:
        return []
    data = base / "data" / f"open-{lang}-test.jsonl"
    _jsonl(data, [_open_row(r) for r in rows])
    task = lm_eval_task_name(content, lang) + OPEN_TASK_SUFFIX
    write_text(base / f"{task}.yaml", _OPEN_TASK.format(
        task=task, group=lm_eval_task_name(content) + OPEN_TASK_SUFFIX, lang=lang, max_tokens=MAX_NEW_TOKENS,
        snapshot=content.snapshot_id,
    ))
    return [_rel(root, data), _rel(root, base / f"{task}.yaml")]


def write_lm_eval(content: SnapshotContent, root: Path, *, prefix: str = "lm_eval") -> list[str]:
    """Per language two tasks over the same rows: `<task>` scores the letters A-D after the lettered question
    (MMLU style), `<task>_options` scores each option's text after the bare question, as clkt's `option-loglik`."""
    base = root / prefix if prefix else root
    out: list[str] = []
    group = lm_eval_task_name(content)
    write_text(base / "clkt_lmeval.py", _LOADER)
    out.append(_rel(root, base / "clkt_lmeval.py"))
    for lang in content.languages:
        rows = [
            {**_mc_row(q, lang), "stem": q.question.strip(), "options": [o.strip() for o in q.options]}
            for q in content.questions_in(lang, "test")
        ]
        _jsonl(base / "data" / f"{lang}-test.jsonl", rows)
        task = lm_eval_task_name(content, lang)
        write_text(base / f"{task}.yaml", _TASK.format(task=task, group=group, lang=lang, snapshot=content.snapshot_id))
        # the template as a JSON string (valid YAML): the cue is data, whatever characters it holds
        text = json.dumps("{{stem}}\n" + answer_cue(lang), ensure_ascii=False)
        opt = task + OPTIONS_TASK_SUFFIX
        write_text(base / f"{opt}.yaml", _OPTIONS_TASK.format(
            task=opt, group=group + OPTIONS_TASK_SUFFIX, lang=lang, text=text, snapshot=content.snapshot_id,
        ))
        out += [_rel(root, base / "data" / f"{lang}-test.jsonl"), _rel(root, base / f"{task}.yaml"), _rel(root, base / f"{opt}.yaml")]
        out += _write_open_tasks(content, root, base, lang)
    return out

