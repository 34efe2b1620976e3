"""The keeper replacing itself in place, so that after ``pip install -U ptyvisor`` every
part runs the new code and no program notices (``ptyvisor restart --upgrade``).

A planned restart first hands the server process's state over as usual (the old
server exits). Then the keeper asks the *installed* code whether it can take over
from this one (``python -m ptyvisor.keeper.takeover --accepts VERSION``): one that
cannot says so, and the keeper only starts a new server process, changing nothing
else. One that can: the keeper writes its state (`State`: the settings, the listening
sockets, the state directory's lock, every program's PTY master and ring, what the
old server handed over) into a memfd, lets those descriptors survive ``execve`` and
re-executes itself as ``serve --take-over FD``. The pid stays, so the programs stay
its children; their PTYs and rings never close, so nothing they write is lost; the
listening socket never closes, so clients that connect meanwhile wait in its backlog.

`VERSION` is the version of `State`'s shape; a keeper accepts the versions it can
read. Stdlib only: the keeper runs it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

VERSION = 1
ACCEPTS = frozenset({1})
"""The `State` versions this code can take over from."""


@dataclass
class State:
    """What a keeper passes to the one that replaces it (all of it JSON)."""

    config: dict[str, Any]
    """`ServerConfig.to_json`, with ``url`` and ``control_path``."""
    explicit_token: bool
    verbose: bool
    lock: int
    tcp: int
    control: int | None
    programs: list[dict[str, Any]]
    """`keeper.Program` as a dict: the descriptors by number."""
    handover: list[dict[str, Any]] | None
    """The old server process's `wire.SessionHandover`s, as JSON."""
    version: int = VERSION
    descriptors: list[int] = field(default_factory=list)
    """Every descriptor the state names: what must survive ``execve``."""

    def __post_init__(self) -> None:
        self.descriptors = [
            self.lock,
            self.tcp,
            *([] if self.control is None else [self.control]),
            *(fd for program in self.programs for fd in (program["master"], program["ring"])),
        ]


def write(state: State) -> int:
    """The state in a memfd that survives ``execve`` (its descriptor)."""
    fd = os.memfd_create("ptyvisor-takeover")
    os.write(fd, json.dumps(asdict(state)).encode())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def read(fd: int) -> State:
    """The state the old keeper wrote (the memfd is closed); raises ValueError for
    one of a version this code does not take, or that is not a state at all."""
    try:
        data = json.loads(os.pread(fd, os.fstat(fd).st_size, 0))
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("version") not in ACCEPTS:
        raise ValueError(f"not a keeper state this version takes: {str(data)[:80]}")
    data.pop("descriptors", None)
    try:
        return State(**data)
    except TypeError as error:
        raise ValueError(f"a keeper state that does not fit: {error}") from None


def installed_accepts(version: int = VERSION) -> str | None:
    """Whether the installed code can take over from a keeper writing ``version``:
    None if it can, else what it said."""
    import subprocess

    try:
        answer = subprocess.run(
            [sys.executable, "-m", "ptyvisor.keeper.takeover", "--accepts", str(version)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot ask the installed ptyvisor: {error}"
    if answer.returncode == 0:
        return None
    said = (answer.stdout + answer.stderr).strip().splitlines()
    return said[-1][:300] if said else f"it exited with {answer.returncode}"


def main(argv: list[str]) -> int:
    """``python -m ptyvisor.keeper.takeover --accepts N``: exit 0 if this code can take
    over from a keeper writing state version N, else say why and exit 1."""
    if len(argv) != 2 or argv[0] != "--accepts" or not argv[1].isdigit():
        print("usage: python -m ptyvisor.keeper.takeover --accepts VERSION", file=sys.stderr)
        return 2
    if int(argv[1]) in ACCEPTS:
        return 0
    print(f"this ptyvisor takes over from keeper state versions {sorted(ACCEPTS)}, not {argv[1]}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
