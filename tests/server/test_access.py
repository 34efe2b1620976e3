"""Who may talk to the server (server/access.py) alone: the Host header names this
server or is refused, whatever its shape; a browser's Origin must be its own host."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.config import ServerConfig
from ptyvisor.server.access import LOOPBACK_NAMES, host_allowed, host_name, origin_allowed


def config(**kwargs: object) -> ServerConfig:
    return ServerConfig(token="t", state_dir=Path("/nonexistent"), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("host", "name"),
    [("localhost:7733", "localhost"), ("[::1]:80", "::1"), ("Example.ORG.", "example.org"),
     ("h:x", None), ("[::1", None), ("[::1]x", None), ("", None), (":80", None)],
)  # fmt: skip
def test_the_name_in_a_host_header(host: str, name: str | None) -> None:
    assert host_name(host) == name


def test_loopback_the_bound_host_the_connected_address_and_allowed_names() -> None:
    plain = config()
    assert host_allowed(plain, "localhost:7733") and host_allowed(plain, "127.0.0.5")
    assert host_allowed(plain, "[::1]:7733")
    assert not host_allowed(plain, "evil.example:7733")  # DNS rebinding
    assert not host_allowed(plain, "192.168.1.9")
    assert host_allowed(plain, "192.168.1.9:7733", local_address="192.168.1.9")
    assert host_allowed(config(host="box.lan"), "box.lan")
    assert host_allowed(config(allowed_hosts=["Agents.example"]), "agents.example:443")
    assert host_allowed(config(allowed_hosts=["*"]), "anything")


def test_a_browsers_origin_is_its_own_host_unless_allowed() -> None:
    plain = config()
    assert origin_allowed(plain, "http://localhost:7733", "localhost:7733")
    assert not origin_allowed(plain, "http://evil.example", "localhost:7733")
    assert not origin_allowed(plain, "http://localhost:7733", None)
    assert origin_allowed(config(allowed_origins=["app://x"]), "app://x", "localhost:7733")


@given(host=st.text(max_size=40), local=st.one_of(st.none(), st.text(max_size=20)))
def test_any_host_header_is_answered_never_raised(host: str, local: str | None) -> None:
    """Allowed only for a loopback name or address, or the address connected to."""
    name = host_name(host)
    if not host_allowed(config(), host, local):
        return
    assert name is not None
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        assert name in LOOPBACK_NAMES
        return
    assert address.is_loopback or (local is not None and name in local)
