"""The guide (docs/, built by MkDocs) and the README work as written: every code block is run,
shown from the file it names, or marked as not runnable with the reason; every relative link
points to a file; nothing on a page is fetched from another server; the site builds with
``mkdocs build --strict`` and its reference pages are the code's."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.docblocks import (
    ROOT,
    Reader,
    copy_examples,
    env_for,
    guide_pages,
    read_blocks,
    shell_lines,
)

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
ASSET_HOSTS = re.compile(r"cdn|unpkg|jsdelivr|googleapis|gstatic|cloudflare|fontawesome|"
                         r"analytics|googletagmanager", re.I)
BLOCKS = [block for page in guide_pages() for block in read_blocks(page)]
GUIDE_PAGES = sorted({b.page for b in BLOCKS if b.kind == "run" and b.page != "README.md"})


def test_every_block_is_run_shown_or_marked_with_a_reason():
    kinds = Counter(block.kind for block in BLOCKS)
    unchecked = [f"{b.where} ({b.language or 'no language'})" for b in BLOCKS
                 if b.kind == "unchecked"]
    assert not unchecked, ("blocks that are neither run, nor a file of the repository, nor "
                           f"marked <!-- not run: REASON -->: {unchecked}")
    assert all(len(b.not_run or "") >= 10 for b in BLOCKS if b.kind == "not run")
    assert kinds["run"] >= 20, kinds


def test_a_block_is_unchecked_unless_run_shown_or_marked(tmp_path):
    """The rule the inventory above relies on, on a page made for it."""
    page = tmp_path / "page.md"
    page.write_text(
        "Some YAML:\n\n```yaml\na: 1\n```\n\n"
        "<!-- not run: a fragment of a suite, for the test -->\n```yaml\nb: 2\n```\n\n"
        "`examples/suite/EVAL.yaml`:\n\n```yaml\nc: 3\n```\n\n"
        "From `examples/suite`:\n\n```bash\nassay runs\n```\n\n"
        "1. In a list:\n\n   ```python\n   print(1)\n   ```\n\n"
        "```\nno language\n```\n")
    blocks = read_blocks(page)
    assert [b.kind for b in blocks] == ["unchecked", "not run", "file", "run", "run",
                                        "unchecked"]
    assert blocks[1].not_run == "a fragment of a suite, for the test"
    assert blocks[3].example == "suite" and blocks[4].code == "print(1)\n"
    page.write_text("```bash\nassay runs\n")
    with pytest.raises(AssertionError, match="never closed"):
        read_blocks(page)


def test_a_bash_line_may_say_the_exit_code_it_ends_with():
    code = ("assay run EVAL.yaml   # a comment\n"
            "assay compare A B     # exits 1: a regression\n"
            "assay judge -e 'a # b' \\\n    -a x   # exits 2\n\n# only a comment\n")
    assert shell_lines(code) == [("assay run EVAL.yaml", (0, 1)),
                                 ("assay compare A B", (1,)),
                                 ("assay judge -e 'a # b'      -a x", (2,))]


def test_the_examples_import_only_what_they_use():
    """A reader copies an example's imports: one it never uses (``assert_case`` in
    examples/pytest, once) reads as part of what the example needs."""
    import ast

    unused = []
    for path in sorted((ROOT / "examples").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {(alias.asname or alias.name).split(".")[0]: node.lineno
                    for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                    for alias in node.names if alias.name != "*"}
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        exported = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                    and isinstance(node.value, str)}  # __all__ entries, string annotations
        unused += [f"{path.relative_to(ROOT)}:{line}: {name}"
                   for name, line in imported.items() if name not in used | exported]
    assert not unused, unused


def test_the_files_shown_are_the_files_they_name():
    shown = [b for b in BLOCKS if b.kind == "file"]
    for block in shown:
        assert block.shown_file is not None
        assert block.shown_file.read_text() == block.code, (
            f"{block.where} differs from {block.shown_file.relative_to(ROOT)}")
    assert len(shown) >= 5


@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in guide_pages()])
def test_relative_links_point_to_files(page):
    path = ROOT / page
    for target in links(path):
        if EXTERNAL.match(target) or target.startswith("#"):
            continue
        file = target.split("#")[0]
        assert (path.parent / file).exists(), f"{page}: {target} does not exist"


def test_external_links_fetch_nothing_for_a_page():
    """External links are listed, never fetched; none is an asset from a CDN (a page must
    read offline), and no image is loaded from another server."""
    external: dict[str, list[str]] = {}
    for page in [*guide_pages(), ROOT / "mkdocs.yml"]:
        text = page.read_text()
        for target in [*links(page), *re.findall(r"https?://[^\s)\"'`>]+", text)]:
            if re.match(r"https?://", target):
                external.setdefault(target, []).append(page.name)
        images = re.findall(r"!\[[^\]]*\]\(\s*<?(https?://[^)\s>]+)", text)
        assert not images, f"{page.name} loads images from other servers: {images}"
    assert external, "the pages name no external address at all: the scan is broken"
    assert not [url for url in external if ASSET_HOSTS.search(url)], external


def test_the_guide_lists_every_page_and_fetches_no_fonts():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["theme"]["font"] is False
    assert "google_analytics" not in config and "analytics" not in config.get("extra", {})

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, dict):
            return [p for value in nav.values() for p in pages(value)]
        return [p for item in nav for p in pages(item)] if isinstance(nav, list) else []

    listed = set(pages(config["nav"]))
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert listed == on_disk


@pytest.mark.process
@pytest.mark.parametrize("page", GUIDE_PAGES)
def test_the_pages_code_runs_as_written(page, tmp_path, mock_server):
    """A page's blocks in order, in one copy of examples/, as a reader would run them."""
    reader = Reader(copy_examples(tmp_path), env_for(mock_server.url))
    try:
        for block in BLOCKS:
            if block.page == page and block.kind == "run":
                reader.run(block)
    finally:
        reader.close()


@pytest.mark.process
@pytest.mark.parametrize(("where", "argument"), [("examples/pytest", "test_agent.py"),
                                                  (".", "examples/pytest")])
def test_the_pytest_example_passes(tmp_path, where, argument):
    """The test file the pytest guide shows passes under pytest, from its own folder and from
    the root above examples/ alike."""
    assert any(b.shown_file == ROOT / "examples/pytest/test_agent.py" for b in BLOCKS)
    copy_examples(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           argument], cwd=tmp_path / where,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "assay judgements" in done.stdout and "6 passed" in done.stdout


@pytest.mark.process
def test_the_connexity_suite_shown_validates(tmp_path, mock_server):
    """The suite docs/connexity.md shows is valid as written, once the agent it names exists
    (its target, its system prompt file): ``assay validate`` finds no problem in it."""
    block = next(b for b in read_blocks(ROOT / "docs" / "connexity.md") if b.language == "yaml")
    assert block.not_run and "test_the_connexity_suite_shown_validates" in block.not_run
    (tmp_path / "EVAL.yaml").write_text(block.code)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "agent.md").write_text("You answer questions about orders.")
    (tmp_path / "agent.py").write_text("def answer(messages):\n    return 'It has shipped.'\n")
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: my_agent\n    provider: python\n    function: agent:answer\n")
    done = subprocess.run(["assay", "validate", "EVAL.yaml"], cwd=tmp_path, capture_output=True,
                          text=True, env=env_for(mock_server.url), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.docs
def test_the_site_builds_strict_with_the_reference_from_the_code(tmp_path):
    """``mkdocs build --strict`` (broken links and anchors fail it: mkdocs.yml's validation),
    into a temporary directory; the command reference has every command of the app and the
    API reference every public name; no page loads a script, style or font from elsewhere."""
    import typer

    import assay
    from assay.cli import app

    site = tmp_path / "site"
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict",
                           "--site-dir", str(site)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"site built in {took:.1f} s")
    cli = (site / "reference" / "cli" / "index.html").read_text()
    command = typer.main.get_command(app)
    for name in command.commands:  # type: ignore[attr-defined]
        assert f'id="assay-{name}"' in cli, f"assay {name} is missing from the CLI reference"
    assert "--budget-usd" in cli and "--allow-different-judge" in cli
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in assay.__all__:
        if name != "__version__":
            assert f'id="assay.{name}"' in api, f"assay.{name} is missing from the API reference"
    for html in site.rglob("*.html"):
        fetched = re.findall(r"<(?:script|link|img)[^>]+(?:src|href)=\"(https?://[^\"]+)\"",
                             html.read_text())
        assert not fetched, f"{html.relative_to(site)} loads {fetched}"


def test_the_commands_shown_name_commands_and_options_that_exist():
    """Every ``assay ...`` a page shows, in a code span or a bash block (run or not), names a
    command of the app and only options it takes: a reader copies a synopsis from the prose
    too, and ``assay compare BASE CAND --policy connexity`` (an option compare never had)
    met 'No such option'."""
    import typer

    from assay.cli import app

    root = typer.main.get_command(app)
    shown = [(page, command) for page in guide_pages() for command in assay_commands(page)]
    wrong = [f"{page.relative_to(ROOT)}: {command!r}: {problem}" for page, command in shown
             for problem in command_problems(root, command)]
    assert not wrong, wrong
    assert len(shown) >= 100, len(shown)


def test_a_command_with_an_option_it_lacks_is_found():
    """The rule above, on commands made for it."""
    import typer

    from assay.cli import app

    root = typer.main.get_command(app)
    assert command_problems(root, "assay compare A B --json --allow-incomplete") == []
    assert command_problems(root, "assay baseline set RUN --store x.db") == []
    assert command_problems(root, "assay compare A B --policy connexity") == [
        "assay compare: no option --policy"]
    assert command_problems(root, "assay baseline sett RUN") == ["assay baseline: no command 'sett'"]


def test_the_viewer_guide_names_every_operation_of_the_rest_api(tmp_path):
    """docs/how-to/viewer.md lists the REST API; the exports, the labels, the agreement and
    the compared case were served but named nowhere in the guide."""
    from assay.server.app import create_app
    from assay.server.settings import ServerSettings

    app = create_app(ServerSettings(store_url=f"sqlite:///{tmp_path}/runs.db"))
    guide = (ROOT / "docs" / "how-to" / "viewer.md").read_text()
    named = {re.sub(r"\{run_id\}", "{id}", path) for path in app.openapi()["paths"]}
    missing = sorted(path for path in named if f"{path}`" not in guide
                     and f"{path}?" not in guide and f"{path} " not in guide)
    assert not missing, missing


def assay_commands(path: Path) -> list[str]:
    """The ``assay ...`` commands of a page: code spans that start with ``assay `` (outside its
    code blocks) and each command of its bash blocks, split at ``|``, ``;``, ``&&``, ``||``."""
    text = re.sub(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", "", path.read_text(),
                  flags=re.S | re.M)
    found = [span for span in (" ".join(m.split()) for m in
                               re.findall(r"(?<!`)`([^`]+)`(?!`)", text))
             if span.startswith("assay ")]
    for block in read_blocks(path):
        if block.language == "bash":
            found += [part.strip() for command, _ in shell_lines(block.code)
                      for part in re.split(r"&&|\|\||;|\|", command)
                      if part.strip().startswith("assay ")]
    return found


def command_problems(root: object, command: str) -> list[str]:
    """What in ``command`` the app does not have: a subcommand, or an option (``--x``,
    ``-x``, ``--x=VALUE``) of the command it names."""
    words = command.split()[1:]
    named, path = root, ["assay"]
    while words and words[0] in getattr(named, "commands", {}):
        named = named.commands[words[0]]  # type: ignore[attr-defined]
        path.append(words.pop(0))
    if hasattr(named, "commands"):
        return [f"{' '.join(path)}: no command {words[0]!r}"] \
            if words and not words[0].startswith("-") else []
    options = {"--help", *(o for p in named.params  # type: ignore[attr-defined]
                            for o in (*p.opts, *p.secondary_opts))}
    flags = [word.split("=")[0] for word in words]
    return [f"{' '.join(path)}: no option {flag}" for flag in flags
            if re.fullmatch(r"--?[A-Za-z][\w-]*", flag) and flag not in options]


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file, outside its code blocks and code spans."""
    text = path.read_text()
    text = re.sub(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)
