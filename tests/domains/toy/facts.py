from __future__ import annotations

from datetime import date
from typing import Literal

from clkt.domain_base import Facts


class LighthouseFacts(Facts):
    kind: Literal["lighthouse"] = "lighthouse"
    name: str
    lit: date  # first lit
    height_m: int
    keeper: str
