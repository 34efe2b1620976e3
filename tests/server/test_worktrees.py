"""Sessions in git worktrees of their own (server/worktrees.py), with real git: the
module alone, then through a supervisor (a real program starting in it, rerun in it,
closed with it removed or kept), then the CLI's run --worktree and close
--remove-worktree against a real server."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from ptyvisor.errors import SpawnError, WorktreeKept
from ptyvisor.server import worktrees
from ptyvisor.server.supervisor import Supervisor
from tests.timeouts import scaled

from ..conftest import (
    PTYVISOR_BIN,
    TOKEN,
    RunningServer,
    child_env,
    env_without_ptyvisor,
    poll,
)

pytestmark = pytest.mark.anyio
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit and a subdirectory."""
    top = tmp_path / "project"
    (top / "src").mkdir(parents=True)
    (top / "src" / "main.txt").write_text("hello\n")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "first")
    return top


def branches(repo: Path) -> set[str]:
    return set(git(repo, "branch", "--format=%(refname:short)").splitlines())


async def test_a_worktree_on_its_own_branch_starting_where_asked(
    repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    made = await worktrees.create(str(repo / "src"), "feat-1", state)
    assert made.branch == "ptyvisor/feat-1" and "ptyvisor/feat-1" in branches(repo)
    assert Path(made.path).is_relative_to(state / "worktrees")
    assert Path(made.cwd) == Path(made.path) / "src"
    assert (Path(made.cwd) / "main.txt").read_text() == "hello\n"
    assert git(Path(made.path), "branch", "--show-current") == "ptyvisor/feat-1"
    with pytest.raises(SpawnError, match="exists already"):
        await worktrees.create(str(repo), "feat-1", state)
    await worktrees.remove(made.path)
    assert not await anyio.Path(made.path).exists()
    assert "ptyvisor/feat-1" in branches(repo), "the branch is the user's"
    await worktrees.remove(made.path)  # gone already: nothing to do


@pytest.mark.parametrize("name", ["-x", "../up", "a/b", "x.lock", "", "a" * 65, "with space"])
async def test_a_name_that_cannot_be_a_branch_never_reaches_git(
    name: str, repo: Path, tmp_path: Path
) -> None:
    with pytest.raises(SpawnError, match="cannot name a worktree"):
        await worktrees.create(str(repo), name, tmp_path / "state")
    assert branches(repo) == {"main"}


async def test_not_a_repository_says_so(tmp_path: Path) -> None:
    with pytest.raises(SpawnError, match="not in a git repository"):
        await worktrees.create(str(tmp_path), "x", tmp_path / "state")


async def test_a_worktree_with_changes_is_kept_and_said_where(repo: Path, tmp_path: Path) -> None:
    made = await worktrees.create(str(repo), "busy", tmp_path / "state")
    (Path(made.path) / "new.txt").write_text("not committed\n")
    with pytest.raises(WorktreeKept, match=f"worktree {made.path} was kept"):
        await worktrees.remove(made.path)
    assert (Path(made.path) / "new.txt").exists()


async def test_a_session_in_a_worktree_runs_again_there_and_closes_with_it(
    supervisor: Supervisor, repo: Path
) -> None:
    argv = ["sh", "-c", "pwd; git branch --show-current"]
    first = await supervisor.spawn(
        argv, cwd=str(repo / "src"), env=child_env(), name=None, cols=80, rows=24,
        worktree="",
    )  # fmt: skip
    summary = first.summary()
    assert summary.worktree is not None and summary.cwd == f"{summary.worktree}/src"
    with anyio.fail_after(scaled(30)):
        await first.exited.wait()
    shown = first.log.read(0).decode()
    assert f"ptyvisor/{first.id}" in shown and summary.cwd in shown

    again = await supervisor.resume(first.id, rerun=True)
    assert again.summary().cwd == summary.cwd  # rerun in the same worktree
    await supervisor.close(first.id, remove_worktree=False)
    with anyio.fail_after(scaled(30)):
        await again.exited.wait()
    await supervisor.close(again.id, remove_worktree=True)
    assert not await anyio.Path(summary.worktree).exists()


async def test_closing_keeps_a_worktree_with_changes(supervisor: Supervisor, repo: Path) -> None:
    session = await supervisor.spawn(
        ["sh", "-c", "echo draft > notes.txt; sleep 60"], cwd=str(repo), env=child_env(),
        name=None, cols=80, rows=24, worktree="drafts",
    )  # fmt: skip
    path = session.summary().worktree
    assert path is not None

    async def written() -> bool:
        return await anyio.Path(path, "notes.txt").exists()

    await poll(written)
    with pytest.raises(WorktreeKept):
        await supervisor.close(session.id, remove_worktree=True)
    assert supervisor.find(session.id) is None, "closed all the same"
    assert (Path(path) / "notes.txt").exists()


async def test_run_worktree_and_close_remove_worktree_from_the_cli(
    repo: Path, server: RunningServer
) -> None:
    env = {**env_without_ptyvisor(), **child_env(), "PTYVISOR_URL": server.url}
    env["PTYVISOR_TOKEN"] = TOKEN
    started = await anyio.run_process(
        [PTYVISOR_BIN, "run", "-d", "--worktree", "cli-one", "--", "sleep", "60"],
        cwd=repo, env=env, check=False,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    session = started.stdout.decode().strip()
    assert "ptyvisor/cli-one" in branches(repo)
    listed = await anyio.run_process([PTYVISOR_BIN, "ls", "--json"], env=env)
    assert b"cli-one" in listed.stdout
    closed = await anyio.run_process(
        [PTYVISOR_BIN, "close", "--remove-worktree", session], env=env, check=False
    )
    assert closed.returncode == 0, closed.stderr
    assert git(repo, "worktree", "list").count("\n") == 0  # only the main one
