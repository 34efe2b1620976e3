"""``serve``'s options (options.py): every wrong value refused before anything starts,
in one line naming the flag; what counts as this machine only; the config made from
them, with the token never in what is logged."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.keeper.options import (
    NUMERIC_OPTIONS,
    add_arguments,
    announce,
    beyond_loopback_warning,
    check,
    is_loopback,
    make_config,
)


def options(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(args))


def test_the_defaults_pass() -> None:
    assert check(options()) is None


@pytest.mark.parametrize("attribute", NUMERIC_OPTIONS)
def test_each_number_out_of_range_is_refused_naming_its_flag(attribute: str) -> None:
    flag, least, most = NUMERIC_OPTIONS[attribute]
    for value in (least - 1, most + 1):
        problem = check(options(flag, str(value)))
        assert problem is not None and problem.startswith(flag) and str(value) in problem
    assert check(options(flag, str(least))) is None


def test_combinations_and_files_that_cannot_work(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    cases = {
        ("--tls-cert", str(cert)): "go together",
        ("--tls-cert", str(cert), "--tls-key", str(tmp_path)): "is a directory",
        ("--tls-cert", str(cert), "--tls-key", str(tmp_path / "no")): "no such file",
        ("--tls-cert", "/dev/null", "--tls-key", str(cert)): "not a regular file",
        ("--detach", "--no-keeper"): "--detach needs the keeper",
        ("--notify-quiet", "-1"): "--notify-quiet",
    }
    for args, expected in cases.items():
        problem = check(options(*args))
        assert problem is not None and expected in problem and "\n" not in problem, args


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost"]
)
def test_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.2", "localhost.example.com", ""])
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@given(st.text(max_size=40))
def test_any_host_text_is_judged_without_raising(host: str) -> None:
    assert isinstance(is_loopback(host), bool)


def test_the_config_keeps_the_token_out_of_what_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PTYVISOR_TOKEN", raising=False)
    state = tmp_path / "state"
    config, explicit = make_config(options("--state-dir", str(state), "--port", "0"))
    assert not explicit and (state / "token").read_text().strip() == config.token
    assert (state.stat().st_mode & 0o077, (state / "token").stat().st_mode & 0o077) == (0, 0)
    said = announce(config, explicit_token=False)
    assert config.token not in "\n".join(said[:-1])  # logged: everything but the page line
    assert said[-1].endswith(f"?token={config.token}")
    assert beyond_loopback_warning(config) is None

    again, _ = make_config(options("--state-dir", str(state)))
    assert again.token == config.token  # stored, not made anew


def test_beyond_this_machine_without_tls_is_warned_of(tmp_path: Path) -> None:
    config, explicit = make_config(
        options("--state-dir", str(tmp_path), "--host", "0.0.0.0", "--token", "t0ken")
    )
    assert explicit and config.token == "t0ken"
    warning = beyond_loopback_warning(config)
    assert warning is not None and "in clear" in warning
