"""Kafka's `sasl.jaas.config` values: `<LoginModule> <flag> (key=value)* ;`.

Kafka reads these with Java's StreamTokenizer (its JaasConfig class), so this parser
accepts the same shapes: words (letters, digits, `.`, `_`, `-`, `$`), single- or
double-quoted strings with backslash escapes, `//` and `/* */` comments, and one entry
per `;`. A value that is a bare number is refused as Kafka refuses it (StreamTokenizer
turns it into a number token, which has no string value); quote it.
"""

from __future__ import annotations

import dataclasses
import re

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")

# Kafka's login modules for the mechanisms the node serves.
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<quoted>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<number>[0-9.][0-9.]*)
    | (?P<word>[A-Za-z_$\-\u00a0-\u00ff][A-Za-z0-9_$.\-\u00a0-\u00ff]*)
    | (?P<punct>[=;])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


class JaasConfigError(ValueError):
    """A `sasl.jaas.config` value Kafka would refuse; the message is Kafka's."""


@dataclasses.dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str]

    def users(self) -> dict[str, str]:
        """The `user_<name>="<password>"` options: the credentials a server accepts."""
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_")}


def _unquote(text: str) -> str:
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str | None]]:
    """(kind, string value) tokens; a number's value is None, as StreamTokenizer's."""
    result: list[tuple[str, str | None]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            # StreamTokenizer returns any other character as an "ordinary" token.
            result.append(("char", None))
            pos += 1
            continue
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        if kind in ("space", "comment"):
            continue
        if kind == "quoted":
            result.append(("word", _unquote(m.group())))
        elif kind == "number":
            result.append(("number", None))
        elif kind == "word":
            result.append(("word", m.group()))
        else:
            result.append((m.group(), None))
    return result


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Every entry of a JAAS configuration text, in order."""
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        module = tokens[i][1]
        i += 1
        if i >= len(tokens):
            raise JaasConfigError("Login module control flag not specified in JAAS config")
        flag = tokens[i][1]
        if flag is None:
            raise JaasConfigError(
                "Login module control flag is not available in the JAAS config")
        if flag.lower() not in CONTROL_FLAGS:
            raise JaasConfigError(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 1
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            key = tokens[i][1]
            value = tokens[i + 2][1] if i + 2 < len(tokens) else None
            if i + 1 >= len(tokens) or tokens[i + 1][0] != "=" or value is None:
                raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config")
            options[str(key)] = value
            i += 3
        if i >= len(tokens):
            raise JaasConfigError("JAAS config entry not terminated by semi-colon")
        i += 1  # the ';'
        entries.append(JaasEntry(str(module), flag.lower(), options))
    if not entries:
        raise JaasConfigError("Login module not specified in JAAS config")
    return entries


def parse_sasl_jaas_config(text: str) -> JaasEntry:
    """A `sasl.jaas.config` property: exactly one login module, as Kafka requires."""
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise JaasConfigError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]
