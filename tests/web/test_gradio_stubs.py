"""Gradio loads without writing type stubs (treadwise/web/gradio_stubs.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gradio as gr
import gradio.component_meta

from treadwise.web import gradio_stubs

COMPONENT = '''
import gradio as gr


class ShopBadge(gr.Textbox):
    """A component of our own, defined as Gradio's are."""
'''


def test_gradio_here_writes_no_stub_beside_a_components_source(tmp_path: Path) -> None:
    # This process imported Gradio after treadwise.web (tests/conftest.py), as the app does.
    assert gradio.component_meta.create_or_modify_pyi is gradio_stubs.no_stub
    source = tmp_path / "shop_badge.py"
    source.write_text(COMPONENT)
    spec = importlib.util.spec_from_file_location("shop_badge", source)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["shop_badge"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop("shop_badge", None)
    assert issubclass(module.ShopBadge, gr.Textbox)
    # Gradio's own writer puts shop_badge.pyi here.
    assert not list(tmp_path.glob("*.pyi"))


def test_once_gradio_is_loaded_installing_changes_nothing() -> None:
    finders = list(sys.meta_path)
    gradio_stubs.install()
    assert sys.meta_path == finders

