"""The third-party files the viewer ships (``report/static/vendor/``): each is the one listed
in ``VENDORED.md`` byte for byte, keeps its licence beside it, and is what the page loads."""

from __future__ import annotations

import hashlib
import re

from assay.report import STATIC_DIR

VENDOR = STATIC_DIR / "vendor"
ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \| (https://[^ |]+)[^|]* \| "
                 r"(\d+) \| `([0-9a-f]{64})` \|$")


def _listed() -> dict[str, tuple[str, str, str, str, int, str]]:
    """VENDORED.md's rows by file: package, version, licence, source, bytes, sha256."""
    rows = {}
    for line in (VENDOR / "VENDORED.md").read_text().splitlines():
        found = ROW.match(line)
        if found:
            name, package, version, licence, source, size, digest = found.groups()
            rows[name] = (package.strip(), version.strip(), licence.strip(), source,
                          int(size), digest)
    return rows


def test_every_vendored_file_is_the_listed_one_byte_for_byte():
    listed = _listed()
    present = sorted(str(p.relative_to(VENDOR)) for p in VENDOR.rglob("*")
                     if p.is_file() and p.name != "VENDORED.md")
    assert present == sorted(listed)  # nothing unlisted, nothing listed missing
    for name, (_, version, _, source, size, digest) in listed.items():
        raw = (VENDOR / name).read_bytes()
        assert len(raw) == size, name
        assert hashlib.sha256(raw).hexdigest() == digest, name
        assert name.split("/")[0].endswith("-" + version), name  # the folder names its version
        assert source.startswith("https://registry.npmjs.org/") and version in source, name


def test_every_vendored_package_keeps_its_licence():
    listed = _listed()
    folders = {name.split("/")[0] for name in listed}
    assert folders == {p.name for p in VENDOR.iterdir() if p.is_dir()}
    for folder in folders:
        licence = VENDOR / folder / "LICENSE"
        assert f"{folder}/LICENSE" in listed, folder
        kinds = {row[2] for name, row in listed.items() if name.startswith(folder + "/")}
        assert len(kinds) == 1, folder  # one licence a package
        expected = {"MIT": "MIT License", "BSD-3-Clause": "BSD 3-Clause License"}[kinds.pop()]
        assert expected in licence.read_text(), folder


def test_the_page_loads_every_vendored_script_and_stylesheet_and_nothing_unlisted():
    page = (STATIC_DIR / "index.html").read_text()
    loaded = re.findall(r'(?:src|href)="static/vendor/([^"]+)"', page)
    code = {name for name in _listed() if name.endswith((".js", ".css"))}
    assert sorted(loaded) == sorted(code)
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)  # no CDN


def test_the_vendored_code_needs_no_eval_and_no_inline_markup():
    """The viewer's policy (script-src 'self'; style-src 'self', no 'unsafe-eval') holds
    for the vendored code too: none of it compiles strings or writes markup."""
    for name in _listed():
        if name.endswith(".js"):
            text = (VENDOR / name).read_text()
            for banned in ("eval(", "new Function", "innerHTML", "outerHTML", "document.write",
                           "insertAdjacentHTML", "setAttribute(\"style\"", "createElement(\"style\""):
                assert banned not in text, (name, banned)

