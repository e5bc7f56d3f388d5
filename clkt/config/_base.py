"""What every configuration section shares: frozen, no unknown keys, no inf/nan; the languages we know."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import SecretStr

from clkt.section import Section

__all__ = ["LANGS_DEFAULT", "SUPPORTED_LANGS", "SecretLookup", "Section"]

LANGS_DEFAULT = ["en", "ja", "zh", "fr", "es"]
SUPPORTED_LANGS = {"en", "ja", "zh", "fr", "es", "de", "it", "pt", "ko", "ru", "ar", "hi"}

# the name of an environment variable (`api_key_env`) -> its value, or None when unset or unnamed
# (`Settings.secret`); what a part that needs API keys receives instead of the whole Settings
SecretLookup = Callable[[str | None], SecretStr | None]
