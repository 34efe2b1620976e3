"""Contexts (client/contexts.py): names for servers, kept in the user's config, and
the order in which a client picks the server it reaches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptyvisor.client import contexts
from ptyvisor.client.scripting import server_url
from ptyvisor.errors import BadContext

LOCAL = "ws://127.0.0.1:7733/"


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("PTYVISOR_URL", raising=False)
    monkeypatch.delenv("PTYVISOR_CONTEXT", raising=False)
    return tmp_path / "ptyvisor" / "contexts.json"


def test_add_use_and_remove(config: Path) -> None:
    assert [(c.name, c.url, c.current) for c in contexts.listing()] == [("default", LOCAL, True)]
    contexts.add("build", "ssh://me@build-box:2222")
    contexts.add("web", "wss://agents.example.org/")
    contexts.use("build")
    assert [(c.name, c.current) for c in contexts.listing()] == [
        ("default", False), ("build", True), ("web", False)
    ]  # fmt: skip
    assert config.stat().st_mode & 0o777 == 0o600
    assert server_url() == "ssh://me@build-box:2222"
    contexts.remove("build")  # the one in use: back to this machine
    assert server_url() == LOCAL
    with pytest.raises(BadContext):
        contexts.remove("build")
    with pytest.raises(BadContext):
        contexts.use("build")
    contexts.use("default")
    assert contexts.listing()[0].current


def test_which_server_a_client_reaches(monkeypatch: pytest.MonkeyPatch) -> None:
    """--url/-H, --context, $PTYVISOR_URL, $PTYVISOR_CONTEXT, the one in use, this one."""
    contexts.add("a", "ssh://a")
    contexts.add("b", "ssh://b")
    contexts.add("c", "ssh://c")
    contexts.use("c")
    assert server_url() == "ssh://c"
    monkeypatch.setenv("PTYVISOR_CONTEXT", "b")
    assert server_url() == "ssh://b"
    monkeypatch.setenv("PTYVISOR_URL", "ws://127.0.0.1:9/")
    assert server_url() == "ws://127.0.0.1:9/"
    assert server_url(None, "a") == "ssh://a"
    assert server_url("a") == "ssh://a"  # the Python API: a name where a URL goes
    assert server_url("ssh://x", "a") == "ssh://x"
    assert server_url("http://127.0.0.1:7/?token=t") == "ws://127.0.0.1:7/"
    with pytest.raises(BadContext):
        server_url("nowhere")


@pytest.mark.parametrize("name", ["default", "-x", "a b", "", "é", "x" * 65, "a/b"])
def test_names_that_cannot_be_one(name: str) -> None:
    with pytest.raises(BadContext):
        contexts.add(name, "ssh://host")


@pytest.mark.parametrize(
    "url", ["ftp://host", "ssh://-oProxyCommand=sh", "ssh://host/path", "host", "ws://"]
)
def test_urls_that_cannot_be_one(url: str) -> None:
    with pytest.raises(BadContext):
        contexts.add("x", url)


def test_a_broken_file_is_said_not_ignored(config: Path) -> None:
    config.parent.mkdir(parents=True)
    config.write_text("{not json")
    with pytest.raises(BadContext, match="cannot read"):
        server_url()
    config.write_text('{"contexts": [1]}')
    with pytest.raises(BadContext, match="not a contexts file"):
        contexts.listing()


@settings(max_examples=200, deadline=None)
@given(name=st.text(max_size=70), url=st.text(max_size=40))
def test_any_name_and_url_are_kept_whole_or_refused(name: str, url: str) -> None:
    try:
        contexts.add(name, url)
    except BadContext:
        return
    assert contexts.url_of(name) == url and "://" in url and not name.startswith("-")
    assert os.path.sep not in name
    contexts.remove(name)
