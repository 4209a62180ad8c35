"""Shared by the format tests: the SARIF 2.1.0 schema validator and golden-file comparison."""
import json
import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def sarif_errors():
    """``sarif_errors(document)``: the schema's complaints about a SARIF log (empty when it validates)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    return lambda document: [f"{list(error.path)}: {error.message}" for error in validator.iter_errors(document)]


@pytest.fixture(scope="session")
def golden():
    """``golden(name, text)`` asserts ``text`` equals ``data/golden/NAME``; ``UPDATE_GOLDEN=1`` rewrites it."""

    def check(name: str, text: str) -> None:
        path = DATA / "golden" / name
        if os.environ.get("UPDATE_GOLDEN") == "1":
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert text == path.read_text(encoding="utf-8"), f"{name} differs (UPDATE_GOLDEN=1 rewrites it)"

    return check
