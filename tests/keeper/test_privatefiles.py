"""Files serve writes where another program of the machine might reach
(keeper/privatefiles.py), on a real file system: links are never followed, and a
directory others can write to is refused unless it is sticky and ours."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from ptyvisor.keeper.privatefiles import append_only, create_new, directory_problem

NOBODY = 65534


def test_a_new_file_is_ours_alone_and_never_one_that_exists(tmp_path: Path) -> None:
    path = tmp_path / "new"
    fd = create_new(path)
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        create_new(path)


def test_a_planted_link_is_not_followed_dangling_or_not(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    link = tmp_path / "serve.log"
    link.symlink_to(target)  # dangling: O_CREAT alone would create the target
    with pytest.raises(FileExistsError):
        create_new(link)
    with pytest.raises(OSError) as followed:
        append_only(link)
    assert followed.value.errno == errno.ELOOP
    assert not target.exists()
    target.write_text("theirs")
    with pytest.raises(OSError):
        append_only(link)
    assert target.read_text() == "theirs"


def test_append_only_makes_the_file_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "serve.log"
    for line in (b"one\n", b"two\n"):
        fd = append_only(path)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    assert path.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_which_directories_are_no_place_for_our_files(tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    assert directory_problem(ours, "recordings") is None
    assert directory_problem(tmp_path / "not yet", "recordings") is None
    for mode in (0o770, 0o707, 0o777):
        ours.chmod(mode)
        problem = directory_problem(ours, "recordings")
        assert problem is not None and "recordings need a directory only you" in problem
    ours.chmod(0o1777)  # sticky and ours: as /tmp is root's
    assert directory_problem(ours, "recordings") is None
    file = tmp_path / "file"
    file.write_text("")
    assert directory_problem(file, "recordings") == f"{file} is not a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away takes root")
def test_a_directory_another_user_owns_is_refused_even_sticky(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    assert directory_problem(theirs, "recordings") is not None
    theirs.chmod(0o1777)
    assert directory_problem(theirs, "recordings") is not None
    os.chown(theirs, 0, 0)  # root's own, as root: ours
    theirs.chmod(0o755)
    assert directory_problem(theirs, "recordings") is None
