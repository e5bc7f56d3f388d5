"""The disasters' fictional entities are made by their domain's folder (`clkt.domains.disasters.control`); this name
stays for its importers."""

from __future__ import annotations

from clkt.domains.disasters.control import fictional_mmi

__all__ = ["fictional_mmi"]
