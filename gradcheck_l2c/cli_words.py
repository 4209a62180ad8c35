"""How the ``trace`` command's words split into the tool's options and the script's own command line, and the
argument types its options take."""
from __future__ import annotations

import argparse

from gradcheck_l2c.errors import UsageError

# Options of ``trace`` that take a value; needed to find where the script's own arguments begin.
VALUE_OPTIONS = frozenset({"--watch", "--json", "--sarif", "--gitlab-codequality", "--output-format", "--fail-on",
                            "--max-findings", "--render", "--html", "--format", "--nproc-per-node"})


def split_trace_argv(argv: list[str], values: frozenset[str] = VALUE_OPTIONS,
                     ) -> tuple[list[str], str | None, list[str], bool]:
    """Split ``trace``'s (or ``fix``'s, whose ``values`` differ) arguments into (tool options, script or
    module, script arguments, is module).

    The tool's options end, as Python's do, at the first word that is not an option (the script),
    after ``-m MODULE``, or at ``--``; every word after that belongs to the script, verbatim.
    """
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            rest = argv[index + 1:]
            return argv[:index], (rest[0] if rest else None), rest[1:], False
        if word == "-m":
            if index + 1 == len(argv):
                raise UsageError("argument -m: expected a module name")
            return argv[:index], argv[index + 1], argv[index + 2:], True
        if word.startswith("-m") and not word.startswith("--"):
            return argv[:index], word[2:], argv[index + 1:], True
        if not word.startswith("-") or word == "-":
            return argv[:index], word, argv[index + 1:], False
        index += 2 if word in values else 1
    return argv, None, [], False


def count(text: str) -> int:
    """argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value
