"""`ServerConfig.bound`: the one change a config sees once its sockets exist."""

from __future__ import annotations

from pathlib import Path

from ptyvisor.config import ServerConfig


def test_a_bound_config_knows_its_url_and_control_socket(tmp_path: Path) -> None:
    config = ServerConfig(token="t", host="::1", port=0, state_dir=tmp_path)
    config.bound(43210, "/run/ctl")
    assert (config.port, config.url, config.control_path) == (
        43210,
        "ws://[::1]:43210/",
        "/run/ctl",
    )


def test_tls_makes_the_url_wss_and_the_keepers_url_wins(tmp_path: Path) -> None:
    config = ServerConfig(token="t", port=0, state_dir=tmp_path, tls_cert=tmp_path / "c")
    config.bound(5, "")
    assert config.url == "wss://127.0.0.1:5/" and config.control_path == ""
    handed = ServerConfig(token="t", port=7, state_dir=tmp_path)
    handed.bound(7, "/c", "ws://localhost:7/")  # what the keeper told its server
    assert handed.url == "ws://localhost:7/"
