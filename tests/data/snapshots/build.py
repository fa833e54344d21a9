"""Regenerates the why-pending snapshot folders next to this file from the package's builder
(``aiplat.samples.snapshots``): ``python tests/data/snapshots/build.py``."""

from __future__ import annotations

import sys
from pathlib import Path

from aiplat.samples.snapshots import files

HERE = Path(__file__).parent


def main(target: Path = HERE) -> None:
    for rel, content in files().items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
