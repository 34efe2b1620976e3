"""Files the server writes where a program of the same machine might reach: never
through a link, never in a directory others can write to.

A dangling link planted where a file is about to be created would make the server
create the link's target instead (anywhere it may write); `create_new` refuses to
follow one. A directory anyone else can write to lets them swap a file for a link
between two calls; `directory_problem` refuses it unless it is sticky and ours (as
``/tmp`` is sticky, but root's).

Stdlib only: ``serve`` checks its options with it before anything else is imported.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def directory_problem(path: Path, what: str) -> str | None:
    """Why ``path`` is no place for ``what`` (``"recordings"``), or None: anyone but
    us and root can write into it, unless it is sticky and ours. A directory that
    does not exist yet is fine (the caller makes it 0700)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{path}: {error.strerror or error}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    me = os.getuid()
    owner_is_other = info.st_uid not in (me, 0) and info.st_mode & stat.S_IWUSR
    if owner_is_other or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        if info.st_mode & stat.S_ISVTX and info.st_uid == me:
            return None
        return f"others can write to {path}: {what} need a directory only you can write to"
    return None


def create_new(path: Path, mode: int = 0o600) -> int:
    """Create ``path`` for writing and return its descriptor: it must not exist, and
    a link there is not followed (``FileExistsError``, ``OSError(ELOOP)``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, mode)


def append_only(path: Path, mode: int = 0o600) -> int:
    """Open ``path`` for appending (made if missing) and return its descriptor; a link
    there is not followed (``OSError(ELOOP)``)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, mode)
