"""A real OpenSSH server for the tests and the benchmark: started on free loopback
ports with its own host key and an authorized key in a folder, one port per host name,
each login getting the environment its host is given (``SetEnv``: a HOME, PATH and
``PTYVISOR_*`` of its own, as another machine would have). Clients reach it with
``ssh -F <folder>/ssh_config NAME``.

Debian's openssh-server (which .ci/run installs); it runs as root in CI, where
privilege separation wants ``/run/sshd``.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.timeouts import scaled

SSHD = "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def local_sshd(base: Path, hosts: Mapping[str, Mapping[str, str]]) -> Iterator[Path]:
    """Run sshd for ``hosts`` (name -> environment of its logins); yields the client's
    ``ssh_config``. Every host's HOME is made under ``base`` unless given."""
    assert Path(SSHD).is_file(), "sshd is not installed (see .ci/run: openssh-server)"
    keys = base / "keys"
    keys.mkdir()
    for name in ("host", "user"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
        )
    (keys / "authorized_keys").write_text((keys / "user.pub").read_text())
    (keys / "authorized_keys").chmod(0o600)
    Path("/run/sshd").mkdir(exist_ok=True)
    ports = {name: free_port() for name in hosts}
    lines = [
        *(f"Port {port}" for port in ports.values()),
        "ListenAddress 127.0.0.1",
        f"HostKey {keys / 'host'}",
        f"AuthorizedKeysFile {keys / 'authorized_keys'}",
        f"PidFile {base / 'sshd.pid'}",
        "UsePAM no\nStrictModes no\nPermitRootLogin yes\nLogLevel ERROR",
        "PasswordAuthentication no\nKbdInteractiveAuthentication no",
    ]
    for name, env in hosts.items():
        home = env.get("HOME") or str(base / f"{name}-home")
        Path(home).mkdir(parents=True, exist_ok=True)
        settings = " ".join(f"{key}={value}" for key, value in {**env, "HOME": home}.items())
        lines += [f"Match LocalPort {ports[name]}", f"  SetEnv {settings}"]
    sshd_config = base / "sshd_config"
    sshd_config.write_text("\n".join(lines) + "\n")
    host_key = (keys / "host.pub").read_text().strip()
    known = base / "known_hosts"
    known.write_text("".join(f"[127.0.0.1]:{port} {host_key}\n" for port in ports.values()))
    config = base / "ssh_config"
    config.write_text(
        "".join(
            f"Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  IdentityFile {keys / 'user'}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n"
            for name, port in ports.items()
        )
    )
    log = base / "sshd.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd_config)], stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + scaled(30)
        first = next(iter(hosts))
        while True:
            assert proc.poll() is None, log.read_text()
            probe = subprocess.run(
                ["ssh", "-F", str(config), first, "true"],
                capture_output=True,
                timeout=30,
                check=False,
            )
            if probe.returncode == 0:
                break
            assert time.monotonic() < deadline, probe.stderr.decode(errors="replace")
            time.sleep(0.1)
        yield config
    finally:
        proc.terminate()
        proc.wait(timeout=10)
