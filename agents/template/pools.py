"""Small built-in pools of same-kind names used as distractors when the entity itself has too few.

Every pool entry is a real name of the right kind, so a distractor is plausible; the generator removes any
entry that is also true of the entity.
"""

from __future__ import annotations

__all__ = [
    "ACTORS",
    "ARTISTS",
    "COMPANIES",
    "COMPETITIONS",
    "COUNTRIES",
    "DIRECTORS",
    "LABELS",
    "QUAKE_PLACES",
    "TEAMS",
    "VENUES",
    "competitions_for",
    "teams_for",
    "venues_for",
]

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

DIRECTORS: tuple[str, ...] = (
    "Christopher Nolan", "Steven Spielberg", "Martin Scorsese", "Quentin Tarantino", "Denis Villeneuve",
    "Ridley Scott", "Greta Gerwig", "Sofia Coppola", "Wes Anderson", "Kathryn Bigelow", "Bong Joon-ho",
    "Guillermo del Toro", "Alejandro González Iñárritu", "Alfonso Cuarón", "Hayao Miyazaki", "Ang Lee",
    "Jane Campion", "Spike Lee", "Darren Aronofsky", "Paul Thomas Anderson", "Chloé Zhao", "Jordan Peele",
    "Sam Mendes", "James Cameron", "Luc Besson", "Pedro Almodóvar", "Hirokazu Kore-eda", "Zhang Yimou",
)

ACTORS: tuple[str, ...] = (
    "Tom Hanks", "Meryl Streep", "Leonardo DiCaprio", "Cate Blanchett", "Denzel Washington", "Natalie Portman",
    "Matt Damon", "Scarlett Johansson", "Christian Bale", "Nicole Kidman", "Ryan Gosling", "Emma Stone",
    "Keanu Reeves", "Charlize Theron", "Joaquin Phoenix", "Viola Davis", "Tom Cruise", "Julia Roberts",
    "Hugh Jackman", "Amy Adams", "Jake Gyllenhaal", "Margot Robbie", "Samuel L. Jackson", "Anne Hathaway",
    "Javier Bardem", "Penélope Cruz", "Marion Cotillard", "Ken Watanabe", "Zhang Ziyi", "Tony Leung",
)

COMPANIES: tuple[str, ...] = (
    "Warner Bros. Pictures", "Universal Pictures", "Paramount Pictures", "Columbia Pictures",
    "20th Century Studios", "Walt Disney Pictures", "Lionsgate", "New Line Cinema", "Legendary Pictures",
    "A24", "Blumhouse Productions", "DreamWorks Pictures", "Focus Features", "Metro-Goldwyn-Mayer",
    "StudioCanal", "Toho", "Studio Ghibli", "Pathé", "Working Title Films", "Amblin Entertainment",
)

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


def _sport(sport: str) -> str:
    s = sport.strip().casefold()
    return "soccer" if s in ("football", "association football") else s


def teams_for(sport: str) -> tuple[str, ...]:
    return TEAMS.get(_sport(sport), ())


def venues_for(sport: str) -> tuple[str, ...]:
    return VENUES.get(_sport(sport), VENUES["_"])


def competitions_for(sport: str) -> tuple[str, ...]:
    return COMPETITIONS.get(_sport(sport), ())
