"""Java `.properties` files, as Kafka's `server.properties` uses them.

Supports `key=value`, `key: value` and `key value`, `#` and `!` comments, backslash line
continuations and the common escapes. Enough for every file Kafka ships or users write.
"""

from __future__ import annotations

from pathlib import Path

from .text_file import read_text

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t":
            key = line[:i]
            rest = line[i:].lstrip(" \t")
            if rest[:1] in ("=", ":") and c in " \t":
                rest = rest[1:].lstrip(" \t")
            elif c in "=:":
                rest = line[i + 1 :].lstrip(" \t")
            return key, rest
        i += 1
    return line, ""


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into an ordered dict; later keys win, like Java."""
    result: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not logical and (not line or line[0] in "#!"):
            continue
        # A line ending in an odd number of backslashes continues on the next one.
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical += line[:-1]
            continue
        logical += line
        key, value = _split(logical)
        result[_unescape(key)] = _unescape(value)
        logical = ""
    if logical:
        key, value = _split(logical)
        result[_unescape(key)] = _unescape(value)
    return result


def read_properties(path: Path) -> dict[str, str]:
    return parse_properties(read_text(path))


def format_properties(values: dict[str, object], header: str | None = None) -> str:
    lines = [f"# {line}" for line in (header or "").splitlines()]
    for key, value in values.items():
        if value is None:
            text = ""
        elif isinstance(value, bool):
            text = str(value).lower()
        else:
            text = str(value)
        lines.append(f"{key}={text}")
    return "\n".join(lines) + "\n"
