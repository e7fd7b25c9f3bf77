"""Every command's --help says what it takes: each subcommand and bench listed with a line, each choice
shown, each option described; ``hivemem bench <name> --help`` reaches the bench's own options."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from bench import BENCHES
from hivemem import cli
from hivemem.services import projections
from hivemem.settings import Settings

COMMANDS = ("up", "demo", "token", "replay", "audit", "mcp", "export", "import", "verify-bundle", "bench")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def undescribed(parser: argparse.ArgumentParser) -> list[str]:
    return [a.dest for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction) and not a.help]  # fmt: skip


def flat(text: str) -> str:
    return " ".join(text.split())  # help is wrapped to the terminal's width


def test_top_level_help_lists_every_command_with_a_line() -> None:
    parser = cli.build_parser()
    text = flat(parser.format_help())
    assert set(subparsers(parser)) == set(COMMANDS)
    for name, sub in subparsers(parser).items():
        assert name in text and sub.description and flat(sub.description) in text, name


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_lists_its_choices_and_describes_its_options(name: str) -> None:
    sub = subparsers(cli.build_parser())[name]
    text = flat(sub.format_help())
    assert sub.description and flat(sub.description) in text
    assert undescribed(sub) == []
    for action in sub._actions:
        for choice in action.choices or ():
            assert str(choice) in text, (name, choice)


def test_bench_help_lists_every_bench_with_its_line() -> None:
    bench = subparsers(cli.build_parser())["bench"]
    text = flat(bench.format_help())
    assert set(subparsers(bench)) == set(BENCHES)
    for name, line in BENCHES.items():
        assert f"{name} {flat(line)}" in text


def test_replay_names_every_read_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_HOME", str(tmp_path))
    assert tuple(projections(Settings.from_env())) == cli.READ_MODELS
    text = flat(subparsers(cli.build_parser())["replay"].format_help())
    assert ", ".join(cli.READ_MODELS) in text


def test_kstar_commands_name_every_type() -> None:
    from governance.kstar.bundle import KINDS

    for name in ("export", "import"):
        text = flat(subparsers(cli.build_parser())[name].format_help())
        assert all(kind in text for kind in (*KINDS, "episodes")), name


class Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


@pytest.mark.parametrize("name", BENCHES)
def test_each_bench_describes_itself_and_its_options(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    def stop(self: argparse.ArgumentParser, *_: Any, **__: Any) -> Any:
        raise Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    with pytest.raises(Parsed) as got:
        importlib.import_module(f"bench.{name}").main([])
    parser = got.value.parser
    assert parser.prog == f"hivemem bench {name}" and parser.description == BENCHES[name]
    assert undescribed(parser) == []


@pytest.mark.parametrize("name", BENCHES)
def test_bench_name_help_is_the_bench_own(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["bench", name, "--help"])
    assert done.value.code == 0
    out = flat(capsys.readouterr().out)
    assert out.startswith(f"usage: hivemem bench {name}") and flat(BENCHES[name]) in out


def test_unknown_arguments_are_refused_outside_bench(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["token", "--tenant", "acme", "--nope"])
    assert done.value.code == 2 and "unrecognized arguments: --nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        cli.main(["bench"])
    assert done.value.code == 2


def test_without_the_bench_package_hivemem_bench_says_it_is_a_dev_tool(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An install without bench/ (the benches are found by name, never imported by the product).
    import sys

    monkeypatch.setitem(sys.modules, "bench", None)
    assert cli.benches() is None
    assert "bench" in subparsers(cli.build_parser())
    assert cli.main(["bench", "memory"]) == 2
    out = flat(capsys.readouterr().out)
    assert "NO_BENCHES" in out and "pip install -e '.[dev]'" in out
