"""Settings is the one reader of the environment, and README's settings table matches it."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from treadwise.settings import PROVIDER_VARIABLES, EnvironmentSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
READERS = {"getenv", "getenvb", "environb"}


def environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read the environment: os.environ (unless assigned to), os.getenv, and
    `from os import environ`; setting a variable for a library (os.environ[X] = ...) is not
    a read."""
    written = {id(node.value) for node in ast.walk(tree)
               if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "os" and (node.attr in READERS or node.attr == "environ"
                                               and id(node) not in written):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" \
                and {a.name for a in node.names} & (READERS | {"environ"}):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_module_but_settings_reads_the_environment() -> None:
    found = []
    for folder in ("treadwise", "experiments"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "treadwise" / "settings.py":
                continue
            found += [f"{path.relative_to(ROOT)}:{line}"
                      for line in environment_reads(ast.parse(path.read_text()))]
    assert found == [], "read the environment through treadwise.settings.Settings instead"


def test_the_scan_sees_every_way_of_reading() -> None:
    code = ("import os\nfrom os import getenv\na = os.environ.get('X')\nb = os.getenv('Y')\n"
            "c = {**os.environ}\nos.environ['Z'] = '1'\ndel os.environ['Z']\n")
    assert environment_reads(ast.parse(code)) == [2, 3, 4, 5]


def documented() -> dict[str, str]:
    """Variable -> default cell of README's settings table (`_APPROACHES` extends a prefix)."""
    text = (ROOT / "README.md").read_text()
    table = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([A-Z_]+)`", cells[0])
        prefix = names[0].rsplit("_", 1)[0]
        for name in names:
            rows[prefix + name if name.startswith("_") else name] = \
                cells[1] if len(names) == 1 else ""
    return rows


def variable(field: dataclasses.Field) -> str:
    """The variable a Settings field is read from, as the pydantic-settings model names it."""
    return EnvironmentSettings.variables()[field.name]


def test_the_environment_model_has_one_field_per_setting() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)} - {"environment"}
    assert set(EnvironmentSettings.model_fields) == fields
    assert EnvironmentSettings.variables()["timeout_s"] == "TREADWISE_TIMEOUT_S"


def test_the_readme_table_lists_every_setting_and_nothing_else() -> None:
    ours = set(EnvironmentSettings.variables().values()) | {v for v in PROVIDER_VARIABLES
                                                            if v.startswith("TREADWISE_")}
    table = documented()
    assert sorted(ours - set(table)) == [], "add these to README's settings table"
    assert sorted(set(table) - ours - set(PROVIDER_VARIABLES)) == [], "Settings does not know"


def test_the_readme_defaults_are_the_fields_defaults() -> None:
    table = documented()
    checked = 0
    for field in dataclasses.fields(Settings):
        if field.name == "environment":
            continue
        cell = table.get(variable(field), "")
        if not re.fullmatch(r"`[^`]+`", cell) or not isinstance(field.default, int | float | str
                                                                   | Path):
            continue
        shown = cell.strip("`")
        if isinstance(field.default, Path):
            assert Path(shown) == field.default, field.name
        elif isinstance(field.default, str):
            assert shown == field.default, field.name
        else:
            assert float(shown) == field.default, field.name
        checked += 1
    assert checked >= 9  # the fields with a plain default (a number, a word, a path)


def test_every_setting_is_read_from_its_variable(tmp_path: Path) -> None:
    settings = Settings.from_env({"TREADWISE_MODEL": "openai:gpt-4o-mini",
                                  "TREADWISE_PERSONAS_DIR": str(tmp_path),
                                  "TREADWISE_MATH_TIMEOUT_S": "2.5",
                                  "TREADWISE_LOCAL_THREADS": "3", "OPENAI_API_KEY": "sk-x"})
    assert (settings.model, settings.personas_dir, settings.math_timeout_s,
            settings.local_threads) == ("openai:gpt-4o-mini", tmp_path, 2.5, 3)
    assert settings.environment["OPENAI_API_KEY"] == "sk-x"
    assert "sk-x" not in repr(settings)


def test_an_empty_environment_gives_the_fields_defaults() -> None:
    settings = Settings.from_env({})
    assert dataclasses.replace(settings, data_dir=Path("data")) == Settings()
    assert settings.data_dir == Path("data").resolve()


def test_a_given_mapping_is_never_topped_up_from_the_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TREADWISE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("TREADWISE_TIMEOUT_S", "soon")
    assert Settings.from_env({}).model == "offline"
    assert Settings().model == "offline"  # built by hand: no environment at all
    with pytest.raises(ValueError, match="TREADWISE_TIMEOUT_S must be a number"):
        Settings.from_env()


def test_lists_are_comma_separated_not_json_and_names_are_exact() -> None:
    settings = Settings.from_env({
        "TREADWISE_HOST": " 0.0.0.0 ", "TREADWISE_AUTH": "ann:pw1, bob:pw2",
        "TREADWISE_PUBLIC_MODELS": "offline, openai:gpt-4o-mini,",
        "TREADWISE_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1",
        "TREADWISE_CONSISTENCY_APPROACHES": "react steps", "TREADWISE_ROUTING": " OFF ",
        "TREADWISE_PORT": "8080.0", "TREADWISE_LOCAL_THREADS": "many", "treadwise_model": "x"})
    assert settings.auth == (("ann", "pw1"), ("bob", "pw2"))
    assert settings.admins == ("ann", "bob")  # unset: every user of TREADWISE_AUTH
    assert settings.public_models == ("offline", "openai:gpt-4o-mini")
    assert settings.trusted_proxies == ("10.0.0.0/8", "127.0.0.1")
    assert settings.consistency_approaches == ("react", "steps")
    assert (settings.host, settings.routing, settings.port) == ("0.0.0.0", "off", 8080)
    assert (settings.public, settings.session_rate) == (True, 10.0)  # not loopback
    assert settings.local_threads == 0 and settings.model == "offline"


def test_blank_values_keep_the_defaults() -> None:
    blank = {variable: " " for variable in EnvironmentSettings.variables().values()}
    assert dataclasses.replace(Settings.from_env(blank), data_dir=Path("data")) == Settings()


@pytest.mark.parametrize(("env", "why"), [
    ({"TREADWISE_TIMEOUT_S": "soon"}, "TREADWISE_TIMEOUT_S must be a number, got 'soon'"),
    ({"TREADWISE_MATH_TIMEOUT_S": "0"}, "TREADWISE_MATH_TIMEOUT_S must be between 0 and 600"),
    ({"TREADWISE_PUBLIC": "maybe"}, "TREADWISE_PUBLIC must be 1 or 0, got 'maybe'"),
    ({"TREADWISE_AUTH": "ann"}, "TREADWISE_AUTH must look like user:password"),
    ({"TREADWISE_TRUSTED_PROXIES": "10.0.0.1,proxy"},
     "TREADWISE_TRUSTED_PROXIES must list IP addresses or networks .* \\(got 'proxy'\\)"),
    ({"TREADWISE_SECRET_KEY": "short"}, "TREADWISE_SECRET_KEY must be at least 16 characters"),
    ({"TREADWISE_DATABASE_URL": "mysql://u:secret@h"},
     "TREADWISE_DATABASE_URL must be a postgresql:// URL \\(got 'mysql'\\)"),
    ({"TREADWISE_RETENTION_DAYS": "-1"}, "TREADWISE_RETENTION_DAYS must be 0 \\(keep everything"),
    ({"TREADWISE_PORT": "nan"}, "TREADWISE_PORT must be a whole number, got 'nan'"),
])
def test_a_bad_value_is_one_line_naming_the_variable(env: dict[str, str], why: str) -> None:
    with pytest.raises(ValueError, match=why) as raised:
        Settings.from_env(env)
    assert type(raised.value) is ValueError and "\n" not in str(raised.value)
    assert "secret" not in str(raised.value)


def test_every_bad_value_is_named_at_once() -> None:
    with pytest.raises(ValueError) as raised:
        Settings.from_env({"TREADWISE_TIMEOUT_S": "soon", "TREADWISE_AUTH": "ann"})
    assert "TREADWISE_TIMEOUT_S" in str(raised.value) and "TREADWISE_AUTH" in str(raised.value)
