"""music's pools of real names: artists and record labels (distractors of the template engine, and names the
control split's invented ones never take).

Every entry is a real name of the right kind, so a distractor is plausible; the generator removes any entry that
is also true of the entity. `POOLS`: every pool, for the control split's namer (`clkt.snapshots.fiction`).
"""

from __future__ import annotations

__all__ = ["ARTISTS", "LABELS", "POOLS"]

ARTISTS: tuple[str, ...] = (
    "Adele", "Taylor Swift", "Coldplay", "Beyoncé", "Radiohead", "Billie Eilish", "Bruno Mars", "Rihanna",
    "Arctic Monkeys", "Kendrick Lamar", "Dua Lipa", "The Weeknd", "Lady Gaga", "Sam Smith", "Harry Styles",
    "Lorde", "Florence + The Machine", "Imagine Dragons", "Muse", "Shakira", "Rosalía", "Stromae",
    "Christine and the Queens", "Utada Hikaru", "Jay Chou", "BTS", "Daft Punk", "Björk",
)

LABELS: tuple[str, ...] = (
    "Columbia Records", "Atlantic Records", "Interscope Records", "Island Records", "Parlophone",
    "Def Jam Recordings", "Capitol Records", "RCA Records", "Republic Records", "XL Recordings",
    "Warp Records", "Sub Pop", "Domino Recording Company", "Polydor Records", "Virgin Records",
    "Epic Records", "Elektra Records", "Rough Trade Records", "Matador Records", "Avex Trax",
)

# every pool of real names, for the control split's namer
POOLS: tuple[tuple[str, ...], ...] = (ARTISTS, LABELS)
