"""A session in a git worktree of its own (``run --worktree``): parallel agents on one
repository, each on its own branch, none treading on another's files.

`create` adds a worktree of the repository holding the session's directory, on a new
branch ``ptyvisor/<name>`` from that repository's ``HEAD``, under the server's state
directory (``worktrees/<repository>-<hash of its path>/<name>``, always writable,
outside the repository); the session starts in the same subdirectory of it as the one
asked for. The session's record keeps the path, so resume starts there again. `remove`
takes it away with ``git worktree remove``, which refuses while files are modified or
untracked: such a worktree is kept and the caller is told where. The branch is kept
either way: what was committed there is the user's to merge or delete.

Everything here runs git as a subprocess, beside the read path, never on it.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import anyio

from ptyvisor.errors import SpawnError, WorktreeKept

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A worktree's name, also the end of its branch name (checked before it reaches git)."""
BRANCH_PREFIX = "ptyvisor/"
GIT_SECONDS = 60.0
_GIT_ENV_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")
"""A server started from a git hook would otherwise aim every command at that repo."""


@dataclass(frozen=True)
class Worktree:
    path: str
    branch: str
    cwd: str
    """Where the session starts: the requested directory's place in the worktree."""


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a worktree, or None."""
    if NAME.fullmatch(name) is None or name.endswith((".lock", ".")) or ".." in name:
        return (
            f"{name[:80]!r} cannot name a worktree: letters, digits, '.', '_' and '-', "
            "up to 64, starting with a letter or digit"
        )
    return None


async def create(cwd: str, name: str, state_dir: Path) -> Worktree:
    """A new worktree for a session asked to start in ``cwd``; raises SpawnError
    (the session is not started) saying why not."""
    problem = name_problem(name)
    if problem is not None:
        raise SpawnError(problem)
    found = await _git(
        cwd, "rev-parse", "--show-toplevel", "--show-prefix", failure="not in a git repository"
    )
    top, _, inside = found.rstrip("\n").partition("\n")  # inside: cwd's place in it
    digest = hashlib.sha256(os.fsencode(top)).hexdigest()[:8]
    home = anyio.Path(state_dir / "worktrees" / f"{Path(top).name}-{digest}")
    path = home / name
    if await path.exists():
        raise SpawnError(f"a worktree named {name!r} exists already: {path}")
    await home.mkdir(parents=True, exist_ok=True)
    branch = BRANCH_PREFIX + name
    await _git(top, "worktree", "add", "-b", branch, "--", str(path), "HEAD", failure="")
    return Worktree(path=str(path), branch=branch, cwd=str(path / inside))


async def remove(path: str) -> None:
    """Remove the worktree at ``path`` (its branch stays); raises WorktreeKept when
    git will not (modified or untracked files), saying so."""
    if not await anyio.Path(path).is_dir():
        return  # removed already, by hand or by an earlier close
    try:
        await _git(path, "worktree", "remove", "--", path, failure="")
    except SpawnError as refused:
        raise WorktreeKept(
            f"the worktree {path} was kept: {refused} (commit or discard its changes, "
            f"then: git worktree remove {path})"
        ) from None


async def _git(cwd: str, *args: str, failure: str) -> str:
    """``git -C cwd args``'s output; raises SpawnError with ``failure`` (else git's
    own first line) when it fails."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROPPED}
    try:
        with anyio.fail_after(GIT_SECONDS):
            done = await anyio.run_process(["git", "-C", cwd, *args], env=env, check=False)
    except (OSError, TimeoutError) as error:
        raise SpawnError(f"git could not run: {error}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise SpawnError(failure or (said[-1] if said else f"git {args[0]} failed"))
    return done.stdout.decode(errors="surrogateescape")
