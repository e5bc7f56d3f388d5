"""sports' pools of real names per sport: teams, venues and competitions (distractors of the template engine,
and names the control split's invented ones never take).

Every entry is a real name of the right kind, so a distractor is plausible; the generator removes any entry that
is also true of the entity. `POOLS`: every pool, for the control split's namer (`clkt.snapshots.fiction`).
"""

from __future__ import annotations

__all__ = ["COMPETITIONS", "POOLS", "TEAMS", "VENUES", "competitions_for", "teams_for", "venues_for"]

TEAMS: dict[str, tuple[str, ...]] = {
    "soccer": (
        "Arsenal", "Chelsea", "Everton", "Tottenham Hotspur", "Manchester United", "Manchester City",
        "Newcastle United", "Aston Villa", "West Ham United", "Southampton", "Leicester City", "Crystal Palace",
        "Real Madrid", "Barcelona", "Atletico Madrid", "Sevilla", "Valencia", "Juventus", "AC Milan", "Inter",
        "Napoli", "AS Roma", "Bayern Munich", "Borussia Dortmund", "Schalke 04", "Paris Saint-Germain",
        "Olympique Lyonnais", "Olympique de Marseille", "Ajax", "PSV Eindhoven", "Benfica", "FC Porto",
    ),
    "basketball": (
        "Boston Celtics", "Los Angeles Lakers", "Golden State Warriors", "Chicago Bulls", "Miami Heat",
        "San Antonio Spurs", "New York Knicks", "Denver Nuggets", "Milwaukee Bucks", "Phoenix Suns",
        "Dallas Mavericks", "Toronto Raptors",
    ),
    "ice hockey": (
        "Toronto Maple Leafs", "Montreal Canadiens", "Boston Bruins", "New York Rangers", "Chicago Blackhawks",
        "Detroit Red Wings", "Edmonton Oilers", "Pittsburgh Penguins", "Tampa Bay Lightning", "Vegas Golden Knights",
    ),
    "american football": (
        "Kansas City Chiefs", "Green Bay Packers", "Dallas Cowboys", "New England Patriots", "San Francisco 49ers",
        "Pittsburgh Steelers", "Buffalo Bills", "Philadelphia Eagles", "Baltimore Ravens", "Seattle Seahawks",
    ),
    "baseball": (
        "New York Yankees", "Boston Red Sox", "Los Angeles Dodgers", "Chicago Cubs", "San Francisco Giants",
        "St. Louis Cardinals", "Houston Astros", "Atlanta Braves", "Seattle Mariners", "Toronto Blue Jays",
    ),
}

VENUES: dict[str, tuple[str, ...]] = {
    "soccer": (
        "Old Trafford", "Emirates Stadium", "Stamford Bridge", "Goodison Park", "Etihad Stadium", "Villa Park",
        "St James' Park", "Selhurst Park", "Camp Nou", "Santiago Bernabéu", "San Siro", "Allianz Arena",
        "Signal Iduna Park", "Parc des Princes", "Estádio da Luz", "Johan Cruyff Arena",
    ),
    "_": (
        "Madison Square Garden", "Wembley Stadium", "Crypto.com Arena", "United Center", "Lambeau Field",
        "Fenway Park", "Yankee Stadium", "Scotiabank Arena", "Bell Centre", "Soldier Field",
    ),
}

COMPETITIONS: dict[str, tuple[str, ...]] = {
    "soccer": (
        "English Premier League", "English League Championship", "FA Cup", "Spanish La Liga", "Italian Serie A",
        "German Bundesliga", "French Ligue 1", "UEFA Champions League", "UEFA Europa League",
        "Dutch Eredivisie", "Portuguese Primeira Liga", "Scottish Premiership",
    ),
    "basketball": ("NBA", "EuroLeague", "Spanish Liga ACB", "NBL", "Chinese CBA"),
    "ice hockey": ("NHL", "KHL", "Swedish Hockey League", "AHL", "Liiga"),
    "american football": ("NFL", "NCAA Division I FBS", "CFL", "UFL", "XFL"),
    "baseball": ("MLB", "Nippon Professional Baseball", "KBO League", "Liga Mexicana de Beisbol", "CPBL"),
}

# every pool of real names, for the control split's namer
POOLS: tuple[tuple[str, ...], ...] = (*TEAMS.values(), *VENUES.values(), *COMPETITIONS.values())


def _sport(sport: str) -> str:
    s = sport.strip().casefold()
    return "soccer" if s in ("football", "association football") else s


def teams_for(sport: str) -> tuple[str, ...]:
    return TEAMS.get(_sport(sport), ())


def venues_for(sport: str) -> tuple[str, ...]:
    return VENUES.get(_sport(sport), VENUES["_"])


def competitions_for(sport: str) -> tuple[str, ...]:
    return COMPETITIONS.get(_sport(sport), ())
