"""`python -m clkt.reference --write | --check [--root DIR]`: regenerate the generated documentation, or check it.

`--check` exits 1 naming each stale file (and the command that regenerates it), 0 when every file is current."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clkt.reference import GENERATED, stale, write
from clkt.reference._text import GENERATED_BY

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clkt.reference", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write every generated file that changed")
    mode.add_argument("--check", action="store_true", help="exit 1 naming each generated file that is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this checkout's)")
    args = parser.parse_args(argv)
    if args.write:
        changed = write(args.root)
        print(f"wrote {len(changed)} of {len(GENERATED)} generated files" + "".join(f"\n  {p}" for p in changed))
        return 0
    old = stale(args.root)
    for path in old:
        print(f"{path}: stale (differs from the code); run `{GENERATED_BY}`", file=sys.stderr)
    if not old:
        print(f"all {len(GENERATED)} generated files are current")
    return 1 if old else 0


if __name__ == "__main__":
    sys.exit(main())
