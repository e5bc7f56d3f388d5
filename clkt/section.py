"""The base of every configuration section (a TOML table): frozen, no unknown keys, no inf/nan.

It lives outside `clkt.config` so that a domain's own settings (`clkt.domains.<name>.settings`) can build on it
without importing the configuration package, which itself loops over the domain registry."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Section"]


class Section(BaseModel):
    """A configuration section (a TOML table): frozen, unknown keys refused, inf/nan refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
