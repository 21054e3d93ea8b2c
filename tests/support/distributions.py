"""An installed distribution on a temporary sys.path entry, as pip would leave it (for plugins)."""

from __future__ import annotations

from pathlib import Path


def install_distribution(site: Path, name: str, modules: dict[str, str],
                         entry_points: str) -> Path:
    """Write `modules` (module name -> source) and a dist-info with `entry_points` (the text of
    entry_points.txt) into `site`; put `site` on sys.path (monkeypatch.syspath_prepend) to
    install it."""
    dist_info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    dist_info.mkdir(parents=True)
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(entry_points)
    return site
