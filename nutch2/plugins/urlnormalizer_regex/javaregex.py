"""Java regular expressions and replacement strings (java.util.regex, what Nutch's rule files are written in) as
Python's ``re`` reads them.

Patterns: an inline flag group in the middle, ``(?i)``, applies in Java from there to the end of its group (across
``|``), which ``re`` refuses; it becomes scoped groups ``(?i:...)`` around the rest of each alternative. ``(?<name>``
and ``\\k<name>`` become ``(?P<name>`` and ``(?P=name)``, ``\\Q...\\E`` is quoted, ``\\z`` becomes ``\\Z`` (and Java's
``\\Z``, end of input before a final line break, ``(?=\\n?\\Z)``). Java's flags ``u``, ``d`` and ``U`` have no ``re``
equivalent that matters for URLs and are dropped. Constructs ``re`` lacks (``\\p{Alpha}``, class intersections
``[a-z&&[^x]]``) raise JavaRegexError.

Replacements: ``$n`` (the longest group number the pattern has), ``${name}``, ``\\x`` for a literal x.
"""

from __future__ import annotations

import re

_FLAGS = re.compile(r"\(\?([idmsuxU]*(?:-[idmsuxU]*)?)([):])")  # (?i) sets flags, (?i:...) is a group with them
_KEEP = "imsx"  # Java flags re has as scoped flags


class JavaRegexError(ValueError):
    """A Java regular expression or replacement string that cannot be read as Python's."""


def _scoped(flags: str) -> str | None:
    """The ``re`` scoped-group prefix for Java inline flags (``i-s`` -> ``(?i-s:``), None when nothing remains."""
    on, _, off = flags.partition("-")
    on = "".join(f for f in on if f in _KEEP)
    off = "".join(f for f in off if f in _KEEP)
    if not on and not off:
        return None
    return f"(?{on}{'-' + off if off else ''}:"


def translate_pattern(java: str) -> str:
    """The ``re`` pattern matching what the Java pattern matches (the module docstring lists the conversions)."""
    out: list[str] = []
    # one entry per open group (the pattern itself first): the scoped flag groups opened inside it so far
    scopes: list[list[str]] = [[]]
    i, n = 0, len(java)
    while i < n:
        ch = java[i]
        if ch == "\\":
            i = _escape(java, i, out)
            continue
        if ch == "[":
            i = _char_class(java, i, out)
            continue
        if ch == "(":
            m = _FLAGS.match(java, i)
            if m and m.group(2) == ")":
                prefix = _scoped(m.group(1))
                if prefix:
                    out.append(prefix)
                    scopes[-1].append(prefix)
                i = m.end()
                continue
            if m:
                out.append(_scoped(m.group(1)) or "(?:")
                i = m.end()
            elif java.startswith("(?<", i) and i + 3 < n and java[i + 3] not in "=!":
                out.append("(?P<")
                i += 3
            else:
                out.append("(")
                i += 1
            scopes.append([])
            continue
        if ch == "|":
            opened = scopes[-1]
            out.append(")" * len(opened) + "|" + "".join(opened))
        elif ch == ")":
            if len(scopes) == 1:
                raise JavaRegexError(f"unbalanced ')' at position {i}")
            out.append(")" * len(scopes.pop()) + ")")
        else:
            out.append(ch)
        i += 1
    if len(scopes) != 1:
        raise JavaRegexError("missing ')'")
    out.append(")" * len(scopes[0]))
    return "".join(out)


def _escape(java: str, i: int, out: list[str]) -> int:
    """Copy the escape at ``java[i]`` (a backslash) to ``out``, translated; the index after it."""
    if i + 1 >= len(java):
        raise JavaRegexError("pattern ends with a lone backslash")
    nxt = java[i + 1]
    if nxt == "Q":
        end = java.find("\\E", i + 2)
        literal = java[i + 2:] if end < 0 else java[i + 2:end]
        out.append(re.escape(literal))
        return len(java) if end < 0 else end + 2
    if nxt == "z":
        out.append(r"\Z")
    elif nxt == "Z":
        out.append(r"(?=\n?\Z)")
    elif nxt == "k" and java.startswith("<", i + 2):
        end = java.find(">", i + 3)
        if end < 0:
            raise JavaRegexError(f"unterminated \\k<name> at position {i}")
        out.append(f"(?P={java[i + 3:end]})")
        return end + 1
    elif nxt in "pP":
        raise JavaRegexError(f"Java character class \\{nxt}{{...}} at position {i} has no equivalent here; write "
                             "it as a bracket expression such as [a-zA-Z]")
    else:
        out.append(java[i:i + 2])
    return i + 2


def _char_class(java: str, i: int, out: list[str]) -> int:
    """Copy the bracket expression starting at ``java[i]`` to ``out``; the index after it."""
    j = i + 1
    if java.startswith("^", j):
        j += 1
    if java.startswith("]", j):  # a ']' first is literal
        j += 1
    while j < len(java):
        ch = java[j]
        if ch == "\\":
            if java.startswith(("p", "P"), j + 1):
                raise JavaRegexError(f"Java character class \\{java[j + 1]}{{...}} at position {j} has no "
                                     "equivalent here; write it as a bracket expression such as [a-zA-Z]")
            j += 2
            continue
        if ch == "[" or java.startswith("&&", j):
            raise JavaRegexError(f"nested character class or '&&' at position {j}: Java's class union and "
                                 "intersection have no equivalent here; write one bracket expression")
        if ch == "]":
            out.append(java[i:j + 1])
            return j + 1
        j += 1
    raise JavaRegexError(f"unclosed character class at position {i}")


def translate_replacement(java: str, pattern: re.Pattern[str]) -> str:
    """The ``re.sub`` template doing what the Java replacement string does for ``pattern`` (Matcher.replaceAll):
    ``$n`` takes as many digits as still name a group of the pattern, ``${name}`` a named group, ``\\x`` is x."""
    out: list[str] = []
    i, n = 0, len(java)
    while i < n:
        ch = java[i]
        if ch == "\\":
            if i + 1 >= n:
                raise JavaRegexError("replacement ends with a lone backslash")
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
        elif ch == "$":
            i = _group_ref(java, i, pattern, out)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _group_ref(java: str, i: int, pattern: re.Pattern[str], out: list[str]) -> int:
    """Translate the group reference at ``java[i]`` (a ``$``); the index after it."""
    if java.startswith("{", i + 1):
        end = java.find("}", i + 2)
        name = java[i + 2:end] if end > 0 else ""
        if not name or name not in pattern.groupindex:
            raise JavaRegexError(f"replacement names group {{{name}}}, which the pattern does not have")
        out.append(f"\\g<{name}>")
        return end + 1
    j = i + 1
    if j >= len(java) or not java[j].isdigit():
        raise JavaRegexError(f"'$' at position {i} of the replacement is not followed by a group number (write "
                             "\\$ for a dollar sign)")
    number = int(java[j])
    j += 1
    while j < len(java) and java[j].isdigit() and number * 10 + int(java[j]) <= pattern.groups:
        number = number * 10 + int(java[j])
        j += 1
    if number > pattern.groups:
        raise JavaRegexError(f"replacement refers to group {number}, but the pattern has {pattern.groups}")
    out.append(f"\\g<{number}>")
    return j
