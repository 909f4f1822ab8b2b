"""Markdown that shows the data's own words: Streamlit reads every message as Markdown, where a class named
'ENTY:color' lost ':color' to its directive syntax, `$` opens LaTeX and `*` or `_` turn into emphasis."""

import re

SPECIAL = re.compile(r"([\\`*_\[\]<>$~|#]|:(?=[A-Za-z]))")


def plain(text: str) -> str:
    """`text` as Markdown shows it literally: what Markdown or Streamlit's directives would read (emphasis, code,
    links, LaTeX, tables, a colon before a word) escaped with a backslash; the rest, as it is."""
    return SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    """`text` as an inline code span, whatever it holds: fenced by more backticks than it has in a row (a path
    holding one had closed the span), its line breaks as spaces."""
    flat = " ".join(text.splitlines())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
