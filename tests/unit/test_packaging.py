"""pyproject's package list: every Python package and every directory of package data is in it, so a
wheel (and ``pip install -e``) carries them and setuptools has nothing to warn about."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools.discovery import PEP420PackageFinder

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
FOUND = set(PEP420PackageFinder.find(str(ROOT), **{k: tuple(v) for k, v in CONFIG["packages"]["find"].items()
                                                    if k in ("include", "exclude")}))  # fmt: skip
TOP = ("contracts", "governance", "inference", "producers", "streams", "processors", "projections", "hivemem",
       "deploy")  # fmt: skip


def dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).parts)


def test_every_python_package_is_listed() -> None:
    packages = {dotted(init.parent) for top in TOP for init in (ROOT / top).rglob("__init__.py")}
    assert packages and packages <= FOUND, sorted(packages - FOUND)


def test_every_directory_of_package_data_is_listed() -> None:
    data_dirs = set()
    for package, patterns in CONFIG["package-data"].items():
        base = ROOT.joinpath(*package.split("."))
        for pattern in patterns:
            files = [f for f in base.glob(pattern) if f.is_file()]
            assert files, f"{package}: {pattern} matches nothing"
            data_dirs |= {dotted(f.parent) for f in files}
    assert {"contracts.schemas.episode", "deploy.kafka", "projections.dashboard.static.vendor"} <= data_dirs
    assert data_dirs <= FOUND, sorted(data_dirs - FOUND)


def test_the_dashboard_ships_everything_under_static() -> None:
    dashboard = ROOT / "projections" / "dashboard"
    shipped = {f for p in CONFIG["package-data"]["projections.dashboard"] for f in dashboard.glob(p) if f.is_file()}
    static = {f for f in (dashboard / "static").rglob("*") if f.is_file() and "__pycache__" not in f.parts}
    assert shipped == static, sorted(str(f) for f in static - shipped)
    assert any(f.parent.name == "vendor" and f.suffix == ".js" for f in shipped)


def test_tests_and_the_benchmarks_stay_out() -> None:
    # bench/ is a development tool: `hivemem bench` finds it in a checkout, an installed wheel has none of it.
    assert not {p for p in FOUND if p.startswith(("tests", "bench")) or "__pycache__" in p}
    assert (ROOT / "bench" / "__init__.py").is_file()
