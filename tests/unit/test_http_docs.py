"""The route tables of the docs say what the server does: each documented route is an operation
of the OpenAPI document, each documented query parameter one it reads, each documented field a
property it takes or answers; and every operation is documented in docs/http-api.md."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_mcp_tools import app

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROOTS = re.compile(r"^/(api|caml|kmp|kstar|clam|healthz|readyz|metrics)\b")
METHOD = re.compile(r"^(GET|POST|PUT|DELETE|PATCH) (/\S*)$")
CODE = re.compile(r"`([^`]+)`")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Backticked words in a row that are values or notation, not field names.
NOT_FIELDS = {"null", "true", "false", "local", "llm", "auto", "merge", "replace", "memory"}


def shape(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path.replace(":path", ""))


@cache
def openapi() -> dict[str, Any]:
    return app().openapi()


def operations() -> dict[tuple[str, str], dict[str, Any]]:
    return {(m.upper(), shape(p)): op for p, ops in openapi()["paths"].items() for m, op in ops.items()}


def names_in(node: Any, seen: set[str]) -> set[str]:
    """Every property name an operation's request and answers can carry ($refs followed)."""
    out: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            seen.add(ref)
            out |= names_in(openapi()["components"]["schemas"][ref.rsplit("/", 1)[-1]], seen)
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out |= set(value)
            out |= names_in(value, seen)
    elif isinstance(node, list):
        for value in node:
            out |= names_in(value, seen)
    return out


def keys_of(code: str) -> list[str]:
    """The names of a backticked JSON shape (``{"status": "ok"}``, ``{truths: [{subject}]}``), not its values."""
    return NAME.findall(re.sub(r':\s*"[^"]*"', ":", code))


def documented_rows(doc: Path) -> list[tuple[int, list[tuple[str, str, list[str]]], list[str]]]:
    """(line, [(method, path, query names)], field names) of each route-table row of a doc.
    ``POST /kstar/v1/traces``, ``/perceptions`` in one cell: the method and root carry over."""
    rows = []
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if not line.startswith("| `"):
            continue
        first, _, rest = line[2:].partition(" | ")
        routes, method, root, fields = [], "", "", []
        for code in CODE.findall(first):
            found = METHOD.match(code)
            if found:
                method, raw = found.groups()
            elif code.startswith("/") and method:
                raw = code
            else:
                fields += keys_of(code) if code.startswith("{") else []
                continue
            path, _, query = raw.replace("[", "").replace("]", "").partition("?")
            if ROOTS.match(path):
                root = "/".join(path.split("/")[:3])
            elif root:
                path = root + path
            else:
                continue
            routes.append((method, path, [q.split("=")[0] for q in query.split("&") if q]))
        if not routes:
            continue
        for code in CODE.findall(rest):
            if code.startswith("{"):
                fields += keys_of(code)
            elif NAME.fullmatch(code) and not code.isupper() and "_" not in code:
                fields.append(code)
        rows.append((n, routes, [f for f in fields if f not in NOT_FIELDS]))
    return rows


ROUTE_DOCS = sorted(p.name for p in DOCS.glob("*.md") if documented_rows(p))


@pytest.mark.parametrize("doc", ROUTE_DOCS)
def test_every_documented_route_parameter_and_field_is_in_the_openapi_document(doc: str) -> None:
    ops, wrong = operations(), []
    for n, routes, fields in documented_rows(DOCS / doc):
        names: set[str] = set()
        for method, path, query in routes:
            op = ops.get((method, shape(path)))
            if op is None:
                wrong.append(f"{doc}:{n}: no operation {method} {path}")
                continue
            params = {p["name"] for p in op.get("parameters", [])}
            wrong += [f"{doc}:{n}: {method} {path} reads no ?{q}=" for q in query if q not in params]
            names |= params | names_in(op, set())
        wrong += [f"{doc}:{n}: no field {f!r} in {[r[:2] for r in routes]}" for f in fields if f not in names]
    assert not wrong, "\n".join(wrong)


def test_every_operation_is_in_the_api_reference() -> None:
    documented = {(m, shape(p)) for _, routes, _ in documented_rows(DOCS / "http-api.md") for m, p, _ in routes}
    missing = sorted(f"{m} {p}" for m, p in operations() if ROOTS.match(p) and (m, p) not in documented)
    assert not missing, "not in docs/http-api.md: " + ", ".join(missing)


def test_the_parser_reads_the_tables() -> None:
    rows = documented_rows(DOCS / "http-api.md")
    routes = [r for _, rs, _ in rows for r in rs]
    assert ("GET", "/api/v1/memory/erasures", ["userId"]) in routes
    assert ("POST", "/kstar/v1/perceptions", []) in routes  # a bare path carries the method and root over
    assert len(routes) > 50


def test_schemas_are_named_by_their_models_and_every_reference_resolves() -> None:
    # The memory views are generic over their time type (contracts/kmms_views.py); the API names them plainly.
    doc = openapi()
    schemas = doc["components"]["schemas"]
    assert {"SearchResult", "MemoryHit", "LayerStep"} <= set(schemas)
    assert not [name for name in schemas if name.endswith("_int_")]
    refs: list[str] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for child in node.values():
                collect(child)
        elif isinstance(node, list):
            for child in node:
                collect(child)

    collect(doc)
    assert "#/components/schemas/MemoryHit" in refs
    assert [r for r in refs if r.rsplit("/", 1)[-1] not in schemas] == []
