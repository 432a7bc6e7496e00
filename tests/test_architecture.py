"""The architecture rules that code review alone would not keep: no import cycles, each
folder importing only from earlier stages, and the architecture page naming every folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_import_cycles_between_modules_and_packages():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_cycles.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout


def _layers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("layers", ROOT / "scripts" / "layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_folder_imports_only_from_earlier_stages():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "layers.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout


def test_the_layer_check_finds_an_import_of_a_later_stage(tmp_path, monkeypatch):
    layers = _layers()
    package = tmp_path / "assay"
    for folder, text in (("types", "from assay.run.runner import Runner\n"),
                         ("run", "from assay.types.case import Case\n")):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
        (package / folder / "mod.py").write_text(text)
    (package / "__init__.py").write_text("")
    monkeypatch.setattr(layers, "ROOT", package)
    found = layers.violations()
    assert len(found) == 1 and "types (stage 1) imports assay.run.runner" in found[0]


def test_every_folder_has_a_stage_and_a_line_in_the_architecture_page():
    layers = _layers()
    package = ROOT / "src" / "assay"
    folders = sorted(p.name for p in package.iterdir()  # a folder of byte-code only is stale
                     if p.is_dir() and any(p.rglob("*.py")))
    page = (ROOT / "docs" / "architecture.md").read_text()
    for name in folders:
        layers.stage_of(name)  # raises for a folder with no stage
        assert f"`{name}/`" in page, f"docs/architecture.md does not say what {name}/ is"
    modules = sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
    assert modules == ["__main__", "_moved", "_version", "errors", "registry"], modules
