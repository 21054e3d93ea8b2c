"""treadwise/datafiles.py's YAML reading: libyaml's speed, the pure loader's values and messages."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import REPO
from treadwise import datafiles
from treadwise.datafiles import load_yaml

PROJECT_YAML = sorted(path for folder in ("treadwise", "experiments", "tests")
                      for path in (REPO / folder).rglob("*.yaml"))


def test_the_fast_loader_is_libyamls_safe_one() -> None:
    # PyYAML's wheels come with libyaml; without it every process reads its files 8x slower.
    assert datafiles._FAST_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("path", PROJECT_YAML, ids=lambda p: str(p.relative_to(REPO)))
def test_every_yaml_file_of_the_project_reads_as_safe_load_reads_it(path) -> None:
    text = path.read_text(encoding="utf-8")
    assert load_yaml(text) == yaml.safe_load(text)


def test_a_broken_text_gets_the_pure_loaders_message() -> None:
    with pytest.raises(yaml.YAMLError) as raised:
        load_yaml("personas: [friendly\nmodels: [offline]\n")
    assert "expected ',' or ']', but got ':'" in str(raised.value)
    assert raised.value.problem_mark.line == 1


def test_no_python_object_is_built() -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml("!!python/object/apply:os.system ['true']\n")
