"""The documentation: the README is a landing page whose links all lead somewhere, and
the site under ``docs/`` builds with ``mkdocs build --strict``, so a broken link or
anchor, or a page left out of the navigation, fails the suite."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptyvisor.wire.protocol import wire_schema

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).parent / "mkdocs"

# [text](target) and ![alt](target), the target up to a space or the closing bracket.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``root``'s site, run from ``root`` as the extension
    pages' includes expect; Material's notice about its own future is turned off."""
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(site)],
        cwd=root,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    result = build(ROOT, tmp_path / "site")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "WARNING" not in log, log
    # Every page is there, the included extension READMEs among them.
    assert (tmp_path / "site" / "protocol" / "index.html").is_file()
    pi = (tmp_path / "site" / "extensions" / "pi" / "index.html").read_text()
    assert "--8&lt;--" not in pi and "--8<--" not in pi
    # The protocol reference, generated from the schema, has every message.
    reference = (tmp_path / "site" / "protocol-reference" / "index.html").read_text()
    for side in ("client_to_server", "server_to_client"):
        for kind in wire_schema()[side]["discriminator"]["mapping"]:
            assert re.search(f'<h3 id="[^"]*"><code>{kind}</code>', reference), kind


def copy_of_the_site(into: Path) -> Path:
    root = into / "repo"
    root.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", root)
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copytree(ROOT / "agent-extensions", root / "agent-extensions")
    return root


@pytest.mark.parametrize(
    ("mistake", "says"),
    [
        ("broken link", "nowhere.md"),
        ("broken anchor", "#no-such-heading"),
        ("page outside the navigation", "orphan.md"),
    ],
)
def test_a_mistake_in_the_docs_fails_the_build(tmp_path: Path, mistake: str, says: str) -> None:
    """The strictness is the configuration's, so it is checked too: each mistake is
    a warning, and a warning fails the build."""
    root = copy_of_the_site(tmp_path)
    page = root / "docs" / "index.md"
    if mistake == "broken link":
        page.write_text(page.read_text() + "\n[gone](nowhere.md)\n")
    elif mistake == "broken anchor":
        page.write_text(page.read_text() + "\n[gone](cli.md#no-such-heading)\n")
    else:
        (root / "docs" / "orphan.md").write_text("# Orphan\n")
    result = build(root, tmp_path / "site")
    assert result.returncode != 0, mistake
    assert says in result.stdout + result.stderr, mistake


def test_every_relative_link_in_the_readme_names_a_file() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = [t for t in LINK.findall(readme) if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]
    assert targets, "the README links to the documentation"
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).is_file()]
    assert not missing, missing
    linked = {t.split("#", 1)[0] for t in targets}
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    # The landing page reaches every page of the guide (index.md is the site's own).
    assert pages - linked == {"docs/index.md"}, pages - linked


def test_the_readme_keeps_the_test_command_that_ci_runs() -> None:
    """``.ci/run`` runs the README's test command verbatim, between marker comments."""
    ci = (ROOT / ".ci" / "run").read_text()
    command = ci.split("# --- the README's test command, verbatim ---\n", 1)[1].split("\n")[0]
    command = command.removesuffix(" || status=$?")
    assert command in (ROOT / "README.md").read_text().splitlines()
