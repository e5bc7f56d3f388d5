"""disasters' pools of real names: earthquake places and countries (distractors of the template engine, and names
the control split's invented ones never take; the control maker draws its countries here).

Every entry is a real name of the right kind, so a distractor is plausible; the generator removes any entry that
is also true of the entity. `POOLS`: every pool, for the control split's namer (`clkt.snapshots.fiction`).
"""

from __future__ import annotations

__all__ = ["COUNTRIES", "POOLS", "QUAKE_PLACES"]

QUAKE_PLACES: tuple[str, ...] = (
    "12 km SW of Ridgecrest, CA", "8 km NE of Parkfield, CA", "15 km W of Petrolia, CA",
    "5 km SSE of Ocotillo, CA", "22 km ESE of Anchorage, Alaska", "40 km NW of Hualien City, Taiwan",
    "80 km E of Namie, Japan", "30 km SSW of Kahramanmaraş, Türkiye", "18 km NNE of Valparaíso, Chile",
    "60 km WSW of Coquimbo, Chile", "25 km N of Kathmandu, Nepal", "10 km SE of Amatrice, Italy",
    "45 km SW of Port-au-Prince, Haiti", "100 km S of Tonga", "35 km NE of Lima, Peru",
    "14 km S of Acapulco, Mexico", "50 km ENE of Christchurch, New Zealand", "9 km NW of Pahala, Hawaii",
    "20 km WNW of Ferndale, CA", "7 km S of Westmorland, CA",
)

COUNTRIES: tuple[str, ...] = (
    "Afghanistan", "Bangladesh", "Brazil", "Burkina Faso", "Cameroon", "Chad", "Colombia", "Ecuador",
    "Ethiopia", "Ghana", "Guatemala", "Haiti", "Honduras", "India", "Indonesia", "Kenya", "Madagascar",
    "Malawi", "Mali", "Mozambique", "Myanmar", "Nepal", "Niger", "Nigeria", "Pakistan", "Peru",
    "Philippines", "Senegal", "Somalia", "South Sudan", "Sri Lanka", "Sudan", "Tanzania", "Uganda",
    "Viet Nam", "Yemen", "Zambia", "Zimbabwe",
)

# every pool of real names, for the control split's namer
POOLS: tuple[tuple[str, ...], ...] = (QUAKE_PLACES, COUNTRIES)
