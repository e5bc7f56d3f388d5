"""movies' pools of real names: directors, actors and production companies (distractors of the template engine, and
names the control split's invented ones never take).

Every entry is a real name of the right kind, so a distractor is plausible; the generator removes any entry that
is also true of the entity. `POOLS`: every pool, for the control split's namer (`clkt.snapshots.fiction`).
"""

from __future__ import annotations

__all__ = ["ACTORS", "COMPANIES", "DIRECTORS", "POOLS"]

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

# every pool of real names, for the control split's namer
POOLS: tuple[tuple[str, ...], ...] = (DIRECTORS, ACTORS, COMPANIES)
