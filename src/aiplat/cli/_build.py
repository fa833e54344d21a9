"""What this installed aiplat was built from: its commit.

In order: ``aiplat/_commit.txt`` written when the wheel was built (setup.py); HEAD of the
source checkout this module runs from (an editable install), read from ``.git`` or asked
of ``git``; the install's PEP 610 ``direct_url.json`` (``pip install git+...`` records the
commit); else "unknown". Kept apart from the ``version``
command so ``aiplat --version`` reads it without loading any command module.
"""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def commit() -> str:
    built = resources.files("aiplat") / "_commit.txt"
    if built.is_file():
        return built.read_text().strip() or "unknown"
    source = Path(__file__).resolve().parents[3]  # src/aiplat/cli/_build.py -> the checkout
    if (source / ".git").exists():
        return _read_head(source / ".git") or _git_head(source)
    return _direct_url_commit()


def _read_head(git: Path) -> str | None:
    """HEAD's commit read from the files git keeps (no process: ``aiplat --version`` stays
    fast); None where they are not the plain layout (a worktree's ``.git`` file, an odd ref),
    which ``git rev-parse`` then answers."""
    try:
        head = (git / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = head[5:]
            loose = git / ref
            if loose.is_file():
                head = loose.read_text().strip()
            else:  # packed: "<sha> <ref>" lines in packed-refs
                packed = (git / "packed-refs").read_text().splitlines()
                head = next(line.split()[0] for line in packed if line.endswith(f" {ref}"))
    except (OSError, StopIteration):
        return None
    return head if re.fullmatch(r"[0-9a-f]{40}", head) else None


def _direct_url_commit() -> str:
    # PEP 610: `pip install git+URL` records the commit it installed.
    from importlib import metadata  # ~30 ms: only when nothing faster answered

    try:
        direct = metadata.distribution("aiplat").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    info: dict[str, Any] = json.loads(direct) if direct else {}
    if "vcs_info" in info:
        return str(info["vcs_info"].get("commit_id") or "unknown")
    url = urlparse(str(info.get("url", "")))
    if url.scheme == "file" and info.get("dir_info", {}).get("editable"):
        return _git_head(Path(unquote(url.path)))
    return "unknown"


def _git_head(source: Path) -> str:
    try:
        done = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    head = done.stdout.strip()
    return head if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", head) else "unknown"
