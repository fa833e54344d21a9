"""Bad input files get one clear error (exit 2), never a traceback, a MemoryError or a hang
(issue 22): ``aiplat.inputs`` and every command that reads a user's file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiplat import inputs
from aiplat.cli.main import main
from aiplat.errors import InputError

BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}'] * 9)}]\n"
    for i in range(1, 9))


@pytest.fixture
def bad(tmp_path: Path) -> dict[str, Path]:
    files: dict[str, str | bytes] = {
        "empty": "",
        "binary": b"\x00\x01\xff\xfe" * 64,
        "latin1": "name: caf\xe9\n".encode("latin-1"),
        "deep.json": "[" * 5000 + "]" * 5000,
        "deep.yaml": "[" * 900 + "]" * 900,
        "list.json": "[1, 2, 3]",
        "num.json": "1",
        "text.yaml": "hello\n",
        "items.json": '{"apiVersion": "v1", "kind": "List", "items": 5}',
        "nan.json": '{"a": NaN}',
        "bomb.yaml": BILLION_LAUGHS,
    }
    out = {}
    for name, data in files.items():
        p = tmp_path / name
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data)
        out[name] = p
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out |= {"fifo": fifo, "dir": tmp_path, "missing": tmp_path / "nope.json",
            "zero": Path("/dev/zero")}
    return out


# ---------------------------------------------------------------------------- the readers


@pytest.mark.parametrize("name, words", [
    ("zero", "a character device, not a regular file"),
    ("fifo", "a FIFO (named pipe), not a regular file"),
    ("dir", "a directory, not a regular file"),
    ("missing", "no such file"),
    ("binary", "not UTF-8 text (byte 2 is 0xff)"),
])
def test_read_text_refuses_before_reading(bad: dict[str, Path], name: str, words: str) -> None:
    with pytest.raises(InputError, match="fix:") as e:
        inputs.read_text(bad[name], "a thing")
    assert str(e.value).startswith(f"{bad[name]}: ") and words in str(e.value)


def test_read_text_refuses_what_is_too_large(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    assert inputs.read_bytes(big, max_bytes=2048) == b"x" * 2048
    with pytest.raises(InputError, match="larger than"):
        inputs.read_bytes(big, max_bytes=2047)


@pytest.mark.parametrize("name, load, words", [
    ("deep.json", inputs.load_json, "nested more than 64 levels"),
    ("deep.yaml", inputs.load_yaml, "nested more than 64 levels"),
    ("nan.json", inputs.load_json, "NaN is not a JSON number"),
    ("bomb.yaml", inputs.load_yaml, "expands to more than"),
    ("latin1", inputs.load_yaml, "not UTF-8"),
])
def test_parsers_refuse_bad_documents(bad: dict[str, Path], name: str, load: object,
                                      words: str) -> None:
    assert callable(load)
    with pytest.raises(InputError, match=words):
        load(bad[name])


def test_nesting_limit_and_duplicates() -> None:
    ok = "[" * 64 + "]" * 64
    assert inputs.parse_json(ok, "x") is not None
    with pytest.raises(InputError, match="nested more than 64"):
        inputs.parse_json("[" + ok + "]", "x")
    with pytest.raises(InputError, match="nested more than 64"):
        inputs.parse_yaml("[" * 65 + "]" * 65, "x")
    with pytest.raises(InputError, match="key 'a' appears twice"):
        inputs.parse_json('{"a": 1, "a": 2}', "x")
    with pytest.raises(InputError, match=r"key 'a' appears twice \(line 2\)"):
        inputs.parse_yaml("a: 1\na: 2\n", "x")
    with pytest.raises(InputError, match="alias refers to a value that contains it"):
        inputs.parse_yaml("a: &a [*a]\n", "x")
    with pytest.raises(InputError, match="x:1:6: not JSON"):
        inputs.parse_json('{"a" 1}', "x")
    with pytest.raises(InputError, match="nested more than 64"):
        inputs.parse_toml("a = " + "[" * 70 + "]" * 70, "x")
    # merge keys are not duplicates; aliases without cycles are fine
    assert inputs.parse_yaml("b: &b {x: 1}\nc:\n  <<: *b\n  <<: *b\n", "x") is not None
    assert inputs.parse_yaml_all("a: 1\n---\n---\nb: 2\n", "x") == [{"a": 1}, {"b": 2}]


def test_shapes() -> None:
    assert inputs.mapping({"a": 1}, "f", "a thing") == {"a": 1}
    with pytest.raises(InputError, match="f: is a list, but a thing is a mapping"):
        inputs.mapping([1], "f", "a thing")
    with pytest.raises(InputError, match="f: is a number, but a thing is a list"):
        inputs.sequence(1, "f", "a thing")


# ---------------------------------------------------------------------------- the commands

SITES = [
    "spec validate {}",
    "plan {} -d {out}",
    "kube render {} -d {out}",
    "node baseline compare {}",
    "node check --baseline {} --root {root} --only gpu-count",
    "node check --image-config {} --root {root} --only gpu-count",
    "node check --kernel-log {} --root {root} --only gpu-count",
    "node inventory --from smi-xml={} --root {root}",
    "node placement --from nvlink={} --root {root}",
    "cdi generate --inventory {} --root {root}",
    "runtime config containerd --current {} --version 2.0.0",
    "accounting report {}",
    "kube lint {out} --inventory {}",
    "sim run --kueue {}",
    "accept compare {} {}",
    "accept report {} -w {out}",
]
ALWAYS_BAD = ["zero", "fifo", "binary", "missing", "deep.json", "list.json", "num.json",
              "nan.json"]


def _run(cmd: str, path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
         ) -> tuple[int, str]:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    argv = cmd.format(str(path), str(path), out=str(tmp_path / "out"), root=root).split()
    try:
        code = main(argv)
    except SystemExit as e:  # commands that exit 1 themselves
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


def _applies(cmd: str, name: str) -> bool:
    """Whether the bad file is bad for this reader (some inputs are valid for some)."""
    if any(t in cmd for t in ("--kernel-log", "nvlink=")) and name in (
            "deep.json", "list.json", "num.json", "nan.json"):
        return False  # a plain-text recording: any text is read (and finds nothing)
    if "--kernel-log" in cmd and name == "binary":
        return False  # a kernel log is any text: bytes that are not UTF-8 are replaced
    if cmd.startswith("kube lint") and name == "nan.json":
        return False  # YAML reads NaN as text: a mapping without pools, an empty inventory
    # a list of records is a valid shape for accounting (of numbers: refused below)
    return not (cmd.startswith("accounting") and name == "list.json")


@pytest.mark.parametrize(("cmd", "name"), [(c, n) for c in SITES for n in ALWAYS_BAD
                                           if _applies(c, n)])
def test_every_reader_refuses_bad_files(bad: dict[str, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str],
                                        cmd: str, name: str) -> None:
    if cmd.startswith("kube lint"):
        # `kube lint DIR` needs a tree; lint the example's with a bad inventory.
        main(["kube", "render", "-d", str(tmp_path / "out")])
        capsys.readouterr()
    code, err = _run(cmd, bad[name], tmp_path, capsys)
    assert code == 2, err
    assert err.startswith("error:") and str(bad[name].name) in err


def test_wrong_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nums.json").write_text("[1, 2]")
    code, err = _run("accounting report {}", tmp_path / "nums.json", tmp_path, capsys)
    assert code == 2 and "must be a mapping" in err
    (tmp_path / "cfg.toml").write_text('version = "two"\n')
    code, err = _run("runtime config containerd --current {} --version 2.0.0",
                     tmp_path / "cfg.toml", tmp_path, capsys)
    assert code == 2 and "'version' is 'two', not a number" in err
    main(["kube", "render", "-d", str(tmp_path / "out")])
    capsys.readouterr()
    for text, words in [("{}", "no cluster/nodes/inventory.yaml"),
                        ("pools: 3\n", "'pools' must be a list"),
                        ("pools: [{name: a}]\n", "pools[0] must be a mapping"),
                        ("pools: [{name: a, nodes: x}]\n", "not the shape of an inventory")]:
        (tmp_path / "inv.yaml").write_text(text)
        code, err = _run("kube lint {out} --inventory {}", tmp_path / "inv.yaml", tmp_path,
                         capsys)
        if text == "{}":  # an empty inventory: lint runs, with nothing to check against
            assert code in (0, 1)
            continue
        assert code == 2 and words in err, err
    # a List whose items is a number, and a manifest that is not a mapping
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "list.json").write_text('{"kind": "List", "items": 5}')
    code, err = _run("kube lint {} --inventory " + str(tmp_path / "out/cluster/nodes/"
                                                        "inventory.yaml"),
                     tmp_path / "tree", tmp_path, capsys)
    assert code == 2 and "items must be a list of objects" in err
    (tmp_path / "tree" / "list.json").write_text("[1]")
    code, err = _run("kube validate {}", tmp_path / "tree", tmp_path, capsys)
    assert code == 2 and "a manifest must be a mapping" in err
    (tmp_path / "k.yaml").write_text("- 1\n- 2\n")
    code, err = _run("sim run --kueue {}", tmp_path / "k.yaml", tmp_path, capsys)
    assert code == 2 and "not a Kueue object" in err


def test_bad_crd_files_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["kube", "render", "-d", str(tmp_path / "out")])
    capsys.readouterr()
    crds = tmp_path / "crds"
    crds.mkdir()
    for text, words in [(b"\xff\xfe", "x.yaml: not UTF-8"),
                        (b"- 1\n", "every document (and a List's items) must be an object"),
                        (b"kind: List\nitems: 3\n", "must be an object"),
                        (b"kind: CustomResourceDefinition\nspec: text\n",
                         "is not the shape of a CRD"),
                        (b"kind: CustomResourceDefinition\nspec: {versions: [{schema: 1}]}\n",
                         "is not the shape of a CRD")]:
        (crds / "x.yaml").write_bytes(text)
        code, err = _run("kube validate {out} --crd-dir {}", crds, tmp_path, capsys)
        assert code == 2 and words in err, err
