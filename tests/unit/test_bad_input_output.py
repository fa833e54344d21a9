"""Output that cannot be written, and interrupts: one clear line, the right exit code, and
nothing half-written (issue 22)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import click
import pytest

from aiplat import fsutil
from aiplat.cli import main as cli_main
from aiplat.errors import InputError, OutputError
from aiplat.fsutil import atomic_write, write_tree


def _listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _dirs(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())


TREE = {f"layer{i % 4}/sub/file{i}.yaml": f"n: {i}\n" for i in range(46)}


def test_write_tree_interrupted_while_staging_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "keep.txt").write_text("mine\n")
    real = fsutil._stage
    calls = []

    def stage(target: Path, raw: bytes, mode: int) -> Path:
        calls.append(target)
        if len(calls) == 17:
            raise KeyboardInterrupt
        return real(target, raw, mode)

    monkeypatch.setattr(fsutil, "_stage", stage)
    with pytest.raises(KeyboardInterrupt):
        write_tree(tmp_path / "kube", TREE)
    assert _listing(tmp_path) == {"keep.txt": b"mine\n"}
    assert _dirs(tmp_path) == []


def test_write_tree_failing_while_renaming_restores_the_old_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tree(tmp_path, {"a.yaml": "old a\n", "b.yaml": "old b\n"})
    real = os.replace
    calls = []

    def replace(src: str | Path, dst: str | Path) -> None:
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(errno.EIO, "I/O error", str(dst))
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OutputError, match="cannot write"):
        write_tree(tmp_path, {"a.yaml": "new a\n", "b.yaml": "new b\n", "c.yaml": "new c\n"})
    monkeypatch.undo()
    assert _listing(tmp_path) == {"a.yaml": b"old a\n", "b.yaml": b"old b\n"}


def test_write_tree_keeps_other_files_and_replaces_its_own(tmp_path: Path) -> None:
    (tmp_path / "other.txt").write_text("x")
    write_tree(tmp_path, {"a.yaml": "1\n"})
    assert write_tree(tmp_path, {"a.yaml": "2\n", "d/b.yaml": "3\n"}) == [
        tmp_path / "a.yaml", tmp_path / "d/b.yaml"]
    assert _listing(tmp_path) == {"a.yaml": b"2\n", "d/b.yaml": b"3\n", "other.txt": b"x"}


def test_a_file_where_a_directory_is_needed(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file")
    with pytest.raises(OutputError) as e:
        write_tree(tmp_path / "out" / "kube", {"a.yaml": "1\n"})
    assert isinstance(e.value, InputError) and isinstance(e.value, OSError)
    assert e.value.errno == errno.ENOTDIR
    assert "a file is where a directory is needed" in str(e.value)
    assert _listing(tmp_path) == {"out": b"a file"}


def test_a_directory_where_a_file_is_needed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").mkdir()
    with pytest.raises(OutputError, match="a directory is where a file is needed"):
        write_tree(tmp_path, {"b.yaml": "1\n", "a.yaml": "2\n"})
    assert _listing(tmp_path) == {}


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "disk is full"),
                                         (errno.EROFS, "read-only")])
def test_disk_full_and_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 code: int, words: str) -> None:
    def fsync(fd: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OutputError, match=words):
        atomic_write(tmp_path / "x" / "f.json", "{}")
    monkeypatch.undo()
    assert _listing(tmp_path) == {} and _dirs(tmp_path) == []


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli_main.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_cli_output_under_proc_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(["kube", "render", "-d", "/proc/aiplat-no-such/kube"], capsys)
    assert code == 2
    assert err.startswith("error: cannot write /proc/aiplat-no-such") and err.count("\n") == 1


def test_cli_output_into_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").write_text("x")
    code, err = _run(["plan", "-d", str(tmp_path / "out" / "sub")], capsys)
    assert code == 2 and "a file is where a directory is needed" in err
    assert _listing(tmp_path) == {"out": b"x"}


def test_cli_disk_full_during_render_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    real = fsutil._stage
    calls = []

    def stage(target: Path, raw: bytes, mode: int) -> Path:
        calls.append(target)
        if len(calls) == 17:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(target, raw, mode)

    monkeypatch.setattr(fsutil, "_stage", stage)
    code, err = _run(["kube", "render", "-d", str(tmp_path / "kube")], capsys)
    assert code == 2 and "disk is full" in err
    assert list(tmp_path.iterdir()) == []


def test_cli_sigint_during_render_exits_130_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    real = fsutil._stage
    calls = []

    def stage(target: Path, raw: bytes, mode: int) -> Path:
        calls.append(target)
        if len(calls) == 17:
            raise KeyboardInterrupt
        return real(target, raw, mode)

    monkeypatch.setattr(fsutil, "_stage", stage)
    code, err = _run(["kube", "render", "-d", str(tmp_path / "kube")], capsys)
    assert code == 130 and "interrupted" in err
    assert list(tmp_path.iterdir()) == []


def _command_raising(exc: BaseException) -> click.Command:
    @click.command()
    def boom() -> None:
        raise exc

    return boom


@pytest.mark.parametrize("exc, code, words", [
    (KeyboardInterrupt(), 130, "interrupted"),
    (PermissionError(errno.EACCES, "Permission denied", "/etc/x"), 2,
     "error: /etc/x: Permission denied"),
    (OSError(errno.ENOSPC, "No space left on device"), 2, "error: No space left on device"),
])
def test_main_maps_escaped_errors(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str],
                                  exc: BaseException, code: int, words: str) -> None:
    monkeypatch.setitem(cli_main.COMMANDS, "boom", ("aiplat.cli.main", "_boom"))
    monkeypatch.setattr(cli_main, "_boom", _command_raising(exc), raising=False)
    got, err = _run(["boom"], capsys)
    assert got == code and words in err
