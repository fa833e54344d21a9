"""`aiplat catalog import`: a model's published config.json becomes a `--catalog` entry.

The configs under tests/fixtures/hf_configs are real published ones (PROVENANCE.yaml: the
repository, path and commit each came from, and the count its publisher prints). A recorded
config cannot show a model whose weights differ from what its config says (a checkpoint
with extra tensors): the count is what transformers would build from the config.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiplat.catalog import load_catalog
from aiplat.catalog.hf_config import count, overlay
from aiplat.catalog.models import CatalogOverlay
from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.spec import example_text
from aiplat.spec.load import load_catalog_overlay

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hf_configs"
PROVENANCE = yaml.safe_load((FIXTURES / "PROVENANCE.yaml").read_text())["files"]
SHAPE = ("layers", "hidden", "ffn_hidden", "heads", "kv_heads", "head_dim", "vocab",
         "max_context", "experts", "experts_per_token", "shared_experts", "expert_ffn_hidden",
         "shared_ffn_hidden", "dense_layers", "mla")
# The packaged catalog's entries for the same models (their shapes are taken from these
# configs by hand; the MoE entries' counts leave norms out, < 0.1 %).
PACKAGED = {"meta-llama--Meta-Llama-3.1-8B.json": "llama-3.1-8b",
            "meta-llama--Meta-Llama-3.1-70B.json": "llama-3.1-70b",
            "meta-llama--Meta-Llama-3.1-405B.json": "llama-3.1-405b",
            "mistralai--Mixtral-8x7B-v0.1.json": "mixtral-8x7b",
            "mistralai--Mixtral-8x22B-v0.1.json": "mixtral-8x22b",
            "Qwen--Qwen2.5-7B.json": "qwen2.5-7b", "Qwen--Qwen2.5-72B.json": "qwen2.5-72b",
            "Qwen--Qwen3-235B-A22B.json": "qwen3-235b-a22b",
            "deepseek-ai--DeepSeek-V3.json": "deepseek-v3"}


def _config(file: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / file).read_text())
    return data


def test_every_fixture_has_its_provenance() -> None:
    files = {p.name for p in FIXTURES.glob("*.json")}
    assert files == set(PROVENANCE)
    for meta in PROVENANCE.values():
        assert meta["repo"] and meta["path"] and len(meta["commit"]) == 40, meta
    # what the issue asks to be covered: Llama 3.x, a Mixtral MoE, Qwen dense and MoE,
    # DeepSeek-V3, Gemma
    archs = {_config(f)["architectures"][0] for f in files}
    assert {"LlamaForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
            "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM", "Gemma3ForCausalLM"} <= archs


def _printed_as(count: float, published: float, unit: float) -> bool:
    """Whether ``count`` prints as ``published`` at the publisher's precision ``unit``,
    rounded or cut: Qwen prints 7,615,616,512 as 7.61B and DeepSeek 37.55B active as 37B."""
    return published - unit / 2 <= count < published + unit


@pytest.mark.parametrize("file", sorted(PROVENANCE))
def test_the_count_is_the_published_one(file: str) -> None:
    """The count printed to the publisher's precision is the published figure (a band one
    printed step wide: 8.03B is 8.025-8.04B). A tied LM head counted twice (Qwen2.5-1.5B:
    1.78B), norms, biases or a router left out of a small model, or idle experts counted as
    active, fall outside it."""
    published = PROVENANCE[file]["published"]
    got = count(_config(file), name="m")
    unit = float(published["unit"])  # PyYAML reads 1.0e7 as text (YAML 1.1)
    assert _printed_as(got.params, float(published["params"]), unit), (got.params, published)
    if "active" in published:
        active_unit = float(published.get("active_unit", unit))
        assert _printed_as(got.active_params, float(published["active"]), active_unit), (
            got.active_params, published)
        assert got.entry.active_params == got.active_params < got.params
    else:
        assert got.active_params == got.params and got.entry.active_params is None


@pytest.mark.parametrize("file", sorted(PACKAGED))
def test_the_shape_is_the_packaged_entry_s(file: str) -> None:
    mine = count(_config(file), name="m").entry
    packaged = load_catalog().model(PACKAGED[file])
    assert packaged is not None
    assert {f: getattr(mine, f) for f in SHAPE} == {f: getattr(packaged, f) for f in SHAPE}
    assert mine.params == pytest.approx(packaged.params, rel=1e-3)
    if packaged.active_params:
        assert mine.active_params == pytest.approx(packaged.active_params, rel=1e-3)


def test_moe_and_mla_fields_of_deepseek_v3() -> None:
    e = count(_config("deepseek-ai--DeepSeek-V3.json"), name="dsv3").entry
    assert (e.experts, e.experts_per_token, e.shared_experts, e.dense_layers) == (256, 8, 1, 3)
    assert (e.expert_ffn_hidden, e.shared_ffn_hidden, e.head_dim) == (2048, 2048, 128)
    assert e.mla is not None and (e.mla.q_lora_rank, e.mla.kv_lora_rank) == (1536, 512)
    assert "not the 1 multi-token-prediction layer" in e.source


def test_dense_layers_of_qwen3_moe_follow_mlp_only_layers() -> None:
    data = _config("Qwen--Qwen3-30B-A3B.json")
    base = count(data, name="m")
    dense = count({**data, "mlp_only_layers": [0, 47]}, name="m")
    assert (base.entry.dense_layers, dense.entry.dense_layers) == (0, 2)
    # two layers trade 128 experts of 768 and a router for one dense FFN of 6144
    h = 2048
    assert base.params - dense.params == 2 * (128 * 3 * h * 768 + 128 * h - 3 * h * 6144)


def test_gemma_ties_its_embeddings_unless_the_config_says_otherwise() -> None:
    data = _config("google--gemma-3-270m.json")
    assert "tie_word_embeddings" not in data
    untied = count({**data, "tie_word_embeddings": False}, name="g")
    assert untied.params - count(data, name="g").params == 262144 * 640


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["catalog", "import", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_overlay_on_stdout_is_what_catalog_reads(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, str(FIXTURES / "Qwen--Qwen3-30B-A3B.json"), "--name",
                        "qwen3-30b-a3b", "--alias", "Qwen/Qwen3-30B-A3B")
    assert rc == 0, err
    assert "qwen3-30b-a3b: 30.5B parameters, 3.35B active per token" in err
    written = tmp_path / "overlay.yaml"
    written.write_text(out)
    entry = load_catalog_overlay(written).models[0]
    assert entry == count(_config("Qwen--Qwen3-30B-A3B.json"), name="qwen3-30b-a3b",
                          aliases=["Qwen/Qwen3-30B-A3B"],
                          provenance=entry.source.split(":")[0]).entry
    assert entry.aliases == ["qwen/qwen3-30b-a3b"]
    doc = yaml.safe_load(out)
    assert doc["models"][0]["params"] == 30532122624  # a whole number, as the data files
    rc, out, _ = _run(capsys, str(FIXTURES / "Qwen--Qwen3-30B-A3B.json"), "--name", "q",
                      "-o", "json")
    assert rc == 0 and json.loads(out) == overlay([count(
        _config("Qwen--Qwen3-30B-A3B.json"), name="q",
        provenance=json.loads(out)["models"][0]["source"].split(":")[0]).entry])


def test_plan_sizes_the_imported_model(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The round trip: import -> --catalog -> a spec naming the model -> plan (about 6 s)."""
    site = tmp_path / "site.yaml"
    rc, _, err = _run(capsys, str(FIXTURES / "Qwen--Qwen3-32B.json"), "--name",
                      "qwen3-32b-site", "--out", str(site))
    assert rc == 0, err
    spec = tmp_path / "platform.yaml"
    text = example_text()
    assert "model: llama-3-70b" in text
    spec.write_text(text.replace("model: llama-3-70b", "model: qwen3-32b-site"))
    # unknown without the overlay...
    assert main(["plan", str(spec), "-d", str(tmp_path / "no"), "-o", "json"]) == 2
    assert "qwen3-32b-site" in capsys.readouterr().err
    # ...planned with it, at the imported count
    out_dir = tmp_path / "out"
    assert main(["--catalog", str(site), "plan", str(spec), "-d", str(out_dir),
                 "-o", "json"]) in (0, 1)
    capsys.readouterr()
    plan = json.loads((out_dir / "plan.json").read_text())
    sized = [w for w in plan["workloads"] if w.get("model") == "qwen3-32b-site"]
    assert {w["name"] for w in sized} == {"assistant-finetune", "assistant"}
    assert all(32762123264 in _numbers(w) for w in sized)


def _numbers(tree: object) -> set[float]:
    if isinstance(tree, dict):
        return set().union(*(_numbers(v) for v in tree.values())) if tree else set()
    if isinstance(tree, list):
        return set().union(*(_numbers(v) for v in tree)) if tree else set()
    return {tree} if isinstance(tree, (int, float)) and not isinstance(tree, bool) else set()


def test_stdin_in_and_stdout_out_through_the_real_command() -> None:
    data = (FIXTURES / "meta-llama--Meta-Llama-3.1-8B.json").read_bytes()
    done = subprocess.run([str(Path(sys.executable).parent / "aiplat"), "catalog", "import", "-",
                           "--name", "llama-3.1-8b-site", "--out", "-"], input=data,
                          capture_output=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    entry = yaml.safe_load(done.stdout)["models"][0]
    assert (entry["name"], entry["params"], entry["maxContext"]) == (
        "llama-3.1-8b-site", 8030261248, 131072)
    assert entry["source"].startswith("(stdin) (sha256 ")
    assert b"Traceback" not in done.stderr


GOOD = _config("Qwen--Qwen3-8B.json")


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != key}


HOSTILE: list[tuple[str, str | bytes, str]] = [
    # (case, file content, what the error must say)
    ("not json", "{\"architectures\": [", "not JSON"),
    ("truncated", (FIXTURES / "Qwen--Qwen3-8B.json").read_bytes()[:300], "not JSON"),
    ("empty", "", "not JSON"),
    ("not utf-8", b"\xff\xfe{}", "UTF-8"),
    ("a list", "[1, 2]", "is a list, but a model's config.json is a mapping"),
    ("a string", "\"config\"", "is text, but a model's config.json is a mapping"),
    ("no layers", json.dumps(_without("num_hidden_layers")),
     "field 'num_hidden_layers': missing"),
    ("no class", json.dumps(_without("architectures") | {"model_type": "bloom"}),
     "field 'model_type': 'bloom' is not an architecture aiplat can count"),
    ("unknown class", json.dumps(GOOD | {"architectures": ["FalconForCausalLM"]}),
     "field 'architectures': 'FalconForCausalLM' is not an architecture aiplat can count"),
    ("multimodal", json.dumps({"architectures": ["Gemma3ForConditionalGeneration"],
                               "text_config": {"hidden_size": 2560}}),
     "vision tower would not be counted"),
    ("two classes", json.dumps(GOOD | {"architectures": ["A", "B"]}),
     "field 'architectures'"),
    ("absurd layers", json.dumps(GOOD | {"num_hidden_layers": 10**9}),
     "field 'num_hidden_layers': 1000000000 is out of range"),
    ("negative", json.dumps(GOOD | {"hidden_size": -4096}), "field 'hidden_size': -4096 is out"),
    ("fraction", json.dumps(GOOD | {"hidden_size": 4096.5}),
     "field 'hidden_size': 4096.5 is not a whole number"),
    ("bool", json.dumps(GOOD | {"vocab_size": True}), "field 'vocab_size': True is not a whole"),
    ("kv heads", json.dumps(GOOD | {"num_key_value_heads": 5}),
     "field 'num_key_value_heads': 5 does not divide num_attention_heads 32"),
    ("tied flag", json.dumps(GOOD | {"tie_word_embeddings": "yes"}),
     "field 'tie_word_embeddings': 'yes' is not true or false"),
    ("top-k", json.dumps(_config("Qwen--Qwen3-30B-A3B.json") | {"num_experts_per_tok": 128}),
     "field 'num_experts_per_tok': 128 is not fewer than the 128 experts"),
    ("no q lora", json.dumps(_config("deepseek-ai--DeepSeek-V3.json") | {"q_lora_rank": None}),
     "field 'q_lora_rank': null"),
    ("NaN", "{\"hidden_size\": NaN}", "not valid JSON"),
]


@pytest.mark.parametrize(("case", "content", "says"), HOSTILE, ids=[c for c, _, _ in HOSTILE])
def test_hostile_configs_exit_2_naming_the_problem_and_write_nothing(
        case: str, content: str | bytes, says: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(content if isinstance(content, bytes) else content.encode())
    out_file = tmp_path / "site.yaml"
    out_file.write_text("models: []\n")  # an earlier overlay must survive a refused import
    rc, out, err = _run(capsys, str(config), "--name", "x", "--out", str(out_file))
    assert rc == 2, (case, err)
    assert out == "" and "Traceback" not in err
    line = next(ln for ln in err.splitlines() if ln.startswith("error: "))
    assert line.startswith(f"error: {config}") and "(fix: " in line, line
    assert says in line, line
    assert out_file.read_text() == "models: []\n"


def test_a_name_comes_from_the_config_or_must_be_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GOOD))
    rc, out, err = _run(capsys, str(config))
    assert rc == 2 and out == "" and "fix: give --name NAME" in err
    config.write_text(json.dumps(GOOD | {"_name_or_path": "Qwen/Qwen3-8B"}))
    rc, out, err = _run(capsys, str(config))
    assert rc == 0, err
    entry = yaml.safe_load(out)["models"][0]
    assert (entry["name"], entry["aliases"]) == ("qwen3-8b", ["qwen/qwen3-8b"])


def test_a_name_is_one_word(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(GOOD | {"_name_or_path": "my org/x y"}))
    for argv in ([str(config), "--name", ""], [str(config), "--name", "qwen 3"],
                 [str(config)]):
        rc, out, err = _run(capsys, *argv)
        assert rc == 2 and out == "" and "a catalog name is one word" in err, err


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                   st.integers(0, 300), st.floats(allow_nan=True), st.text(max_size=6),
                   st.lists(st.integers(-3, 100), max_size=4),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(PROVENANCE)), st.data())
def test_any_mutated_config_is_an_entry_or_an_input_error(file: str, data: st.DataObject
                                                          ) -> None:
    """Whatever a config's fields hold (wrong types, huge, negative, lists, objects, gone),
    the core answers with an entry the --catalog reader accepts or with an InputError naming
    a field; never another exception."""
    config = _config(file)
    keys = data.draw(st.lists(st.sampled_from(sorted(config)), min_size=1, max_size=4,
                              unique=True))
    for key in keys:
        if data.draw(st.booleans()):
            del config[key]
        else:
            config[key] = data.draw(VALUES)
    try:
        got = count(config, name="fuzzed")
    except InputError as e:
        assert "field '" in str(e) or "not a model aiplat can describe" in str(e), e
        return
    CatalogOverlay.model_validate(overlay([got.entry]))
    assert 0 < got.active_params <= got.params
