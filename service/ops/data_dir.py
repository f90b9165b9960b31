"""The data dir's private files: the secrets joust keeps there (the API key, Redis's password),
made once and reused, and the modes that keep the dir 0700 and joust's files in it 0600.

Apart from `processes` (which runs the children) because `joust api` and the remote CLI read
the same files without starting anything.
"""
from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from service.config import Settings

# `joust up`'s log has always named these warnings after the supervisor's module.
log = logging.getLogger("service.ops.processes")

API_KEY_FILE = "api_key"
REDIS_PASSWORD_FILE = "redis_password"
REDIS_DIR = "redis"
# What joust creates in the data dir; only these are tightened, the rest is the user's.
PRIVATE_FILES = ("joust.db", "joust.db-wal", "joust.db-shm", "joust.db-journal", API_KEY_FILE, REDIS_PASSWORD_FILE)


def ensure_secret(path: Path) -> str:
    """The secret kept in `path`, generated (URL-safe, 0600) the first time and reused after."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    return secret


def ensure_api_key(settings: Settings) -> Settings:
    """The settings with an API key: JOUST_API_KEY, else the data dir's key, else a new one kept there."""
    if settings.api_key:
        return settings
    return settings.with_(api_key=ensure_secret(settings.data_dir / API_KEY_FILE))


def make_private(data_dir: Path) -> list[Path]:
    """Make the data dir 0700 and what joust keeps in it 0600 (Redis's dir and its subdirs 0700);
    returns what had to be tightened (a data dir from an older joust, or a user's chmod)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    redis_dir = data_dir / REDIS_DIR
    found = [data_dir, *(data_dir / name for name in PRIVATE_FILES)]
    if redis_dir.is_dir():
        found += [redis_dir, *sorted(redis_dir.rglob("*"))]
    tightened = []
    for path in found:
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue  # never follow a link out of the data dir
        wanted = 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
        if stat.S_IMODE(info.st_mode) & ~wanted:
            try:
                path.chmod(stat.S_IMODE(info.st_mode) & wanted)
            except OSError as exc:  # not ours to change: say so, and go on
                log.warning("could not make %s private: %s", path, exc)
                continue
            tightened.append(path)
    return tightened
