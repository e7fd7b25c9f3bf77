"""Schema evolution rule: every version must read data written by every earlier one.

``backward_problems(reader, writer)`` follows the Avro resolution rules for the schema
shapes HiveMem uses (records, enums, arrays, maps, unions, primitives with promotion).
"""

from __future__ import annotations

from typing import Any

from contracts.avro import SchemaRegistry

_PROMOTIONS = {
    "int": {"int"},
    "long": {"int", "long"},
    "float": {"int", "long", "float"},
    "double": {"int", "long", "float", "double"},
    "string": {"string", "bytes"},
    "bytes": {"bytes", "string"},
}


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        return str(schema["type"]) if isinstance(schema["type"], str) else _kind(schema["type"])
    return str(schema)


def backward_problems(reader: Any, writer: Any, path: str = "") -> list[str]:
    """Why ``reader`` cannot read data written with ``writer`` (empty list: it can)."""
    rk, wk = _kind(reader), _kind(writer)
    if wk == "union":
        return [p for branch in writer for p in backward_problems(reader, branch, path)]
    if rk == "union":
        for branch in reader:
            if not backward_problems(branch, writer, path):
                return []
        return [f"{path or '<root>'}: no reader union branch accepts writer type {wk}"]
    if rk == "record" and wk == "record":
        problems: list[str] = []
        written = {f["name"]: f for f in writer["fields"]}
        for field in reader["fields"]:
            sub = f"{path}.{field['name']}" if path else field["name"]
            if field["name"] in written:
                problems += backward_problems(field["type"], written[field["name"]]["type"], sub)
            elif "default" not in field:
                problems.append(f"{sub}: added without a default")
        return problems
    if rk == "enum" and wk == "enum":
        missing = set(writer["symbols"]) - set(reader["symbols"])
        if missing and "default" not in reader:
            return [f"{path}: enum symbols removed without a default: {sorted(missing)}"]
        return []
    if rk == "array" and wk == "array":
        return backward_problems(reader["items"], writer["items"], f"{path}[]")
    if rk == "map" and wk == "map":
        return backward_problems(reader["values"], writer["values"], f"{path}{{}}")
    if wk in _PROMOTIONS.get(rk, {rk}):
        return []
    return [f"{path or '<root>'}: writer type {wk} cannot be read as {rk}"]


def transitive_problems(reg: SchemaRegistry) -> dict[str, list[str]]:
    """For each family, problems of any version reading any earlier version."""
    out: dict[str, list[str]] = {}
    for family in reg.families():
        versions = reg.versions(family)
        problems: list[str] = []
        for i, newer in enumerate(versions):
            for older in versions[:i]:
                for p in backward_problems(newer.raw, older.raw):
                    problems.append(f"v{newer.version} reading v{older.version}: {p}")
        out[family] = problems
    return out
