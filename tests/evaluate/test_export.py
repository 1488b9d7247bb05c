"""`medplay export`: a verified checkpoint's merged model, adapter, config and model card; anything unverified refused.

Run: PYTHONPATH=tests .venv/bin/python -m pytest -q tests/evaluate/test_export.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from export_checkpoints import SECRET, log_metrics, lora_adapter, record_run, save_step

from medical_team.cli import main
from medical_team.data.medec import bundled_csv
from medical_team.evaluate.export_facts import MEDEC, base_model
from medical_team.evaluate.model_card import front_matter as export_front_matter
from medical_team.run.stack import run_record

VALIDATION = {"val-core/medec_benchmark/acc/mean@1": 0.375, "val-aux/medec_benchmark/format_ok/mean@1": 0.5}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    """A cpu-smoke run folder: step 1 validated, step 2 (with a LoRA adapter) committed, both in the metrics file."""
    root = tmp_path_factory.mktemp("run")
    record_run(root)
    adapter = lora_adapter(tiny_model_dir, tmp_path_factory.mktemp("adapter") / "lora_adapter")
    checkpoints = root / "checkpoints"
    save_step(checkpoints, 1, tiny_model_dir)
    save_step(checkpoints, 2, tiny_model_dir, adapter=adapter)
    log_metrics(checkpoints, [(0, VALIDATION), (1, {"actor/lr": 1e-5}), (2, {"actor/lr": 1e-5})])
    return root


def copy_run(run: Path, tmp_path: Path) -> Path:
    """A copy of the module's run to damage."""
    return Path(shutil.copytree(run, tmp_path / "run"))


def front_matter(card: str) -> dict:
    """The YAML header of a model card."""
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def test_the_newest_verified_step_exports_a_loadable_model_with_its_card(run: Path, tmp_path: Path, tiny_model_dir: Path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    output = tmp_path / "export"
    assert main(["export", "--checkpoint", str(run / "checkpoints"), "--output", str(output)]) == 0
    record = json.loads((output / "medplay_export.json").read_text())
    manifest = json.loads((run / "checkpoints/global_step_2/medplay_complete.json").read_text())["files"]
    assert record["step"] == 2 and record["source_checkpoint"] == str((run / "checkpoints/global_step_2").resolve())
    assert record["manifest_verification"]["files_checked"] == len(manifest)
    assert record["versions"]["training"] == json.loads((run / "versions.json").read_text())
    assert record["versions"]["export"]["verl"] == run_record()["verl"]
    assert record["evaluation"]["validation"] == {
        "step": 0,
        "metrics_file": str(run / "checkpoints/metrics.jsonl"),
        "metrics": dict(sorted(VALIDATION.items())),
    }
    assert (
        record["data"]["inputs"][0]["file"]
        == bundled_csv("MEDEC-MS-ValidationSet-with-GroundTruth-and-ErrorType.csv").name
    )
    # the model, its tokenizer and the adapter: every file of the checkpoint's HF folder and adapter, byte for byte
    for name in record["files"]["model"]:
        assert (output / name).read_bytes() == (run / "checkpoints/global_step_2/actor/huggingface" / name).read_bytes()
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(record["files"]["model"])
    assert "lora_adapter/adapter_model.safetensors" in record["files"]["lora_adapter"]
    model = AutoModelForCausalLM.from_pretrained(output)
    source = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(output)
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "a note"}], return_tensors="pt", return_dict=True)
    with torch.no_grad():
        assert torch.equal(model(**ids).logits, source(**ids).logits)
        adapted = PeftModel.from_pretrained(source, output / "lora_adapter")
        assert adapted(**ids).logits.shape == source(**ids).logits.shape
    # the run's config, secrets redacted
    config = yaml.safe_load((output / "training_config.yaml").read_text())
    assert config["trainer"]["default_local_dir"] == str(run / "checkpoints")
    assert SECRET not in (output / "training_config.yaml").read_text()
    # the card: Hugging Face front matter, then the sections with this run's facts
    card = (output / "README.md").read_text()
    header = front_matter(card)
    assert header["license"] == "other" and "base_model" not in header  # a tiny random model: no hub id, no licence
    assert header["datasets"] == ["abachaa/MEDEC"] and {"medplay", "lora"} <= set(header["tags"])
    assert "**Not for clinical decisions.**" in card and "`lora_adapter/`" in card
    assert "| `val-core/medec_benchmark/acc/mean@1` | 0.3750 |" in card
    assert f"verl {record['versions']['training']['verl']}" in card and MEDEC["licence"] in card
    assert '| `algorithm.adv_estimator` | `"reinforce_plus_plus_per_role"` |' in card


def test_a_damaged_step_is_refused_and_the_root_falls_back_to_the_previous_one(run: Path, tmp_path: Path, capsys):
    copy = copy_run(run, tmp_path)
    weights = copy / "checkpoints/global_step_2/actor/huggingface/model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)  # same size, other content
    output = tmp_path / "export"
    assert main(["export", "--checkpoint", str(weights.parents[2]), "--output", str(output)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"medplay export: error: {weights.parents[2]}: field '--checkpoint': checkpoint global_step_2"
    )
    assert "does not match its manifest (actor/huggingface/model.safetensors: content differs" in err
    assert not output.exists() and not (tmp_path / ".export.partial").exists()
    assert main(["export", "--checkpoint", str(copy / "checkpoints"), "--output", str(output)]) == 0
    out = capsys.readouterr().out
    assert "skipped global_step_2 does not match its manifest" in out
    assert json.loads((output / "medplay_export.json").read_text())["step"] == 1
    assert "lora_adapter" not in {p.name for p in output.iterdir()}  # step 1 has none, and the card says so
    assert "`lora_adapter/`" not in (output / "README.md").read_text()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("no_manifest", "has no manifest of its files"),
        ("torn", "is incomplete (no medplay_complete.json"),
        ("file_added", "is not in the checkpoint's manifest"),
    ],
)
def test_an_unverified_step_is_refused(run: Path, tmp_path: Path, capsys, damage: str, reason: str):
    copy = copy_run(run, tmp_path)
    step = copy / "checkpoints/global_step_2"
    if damage == "no_manifest":  # committed by plain verl: a tracked, finished save without medplay's manifest
        (step / "medplay_complete.json").unlink()
    elif damage == "torn":  # a save killed midway: no marker, the tracker still on the step before
        (step / "medplay_complete.json").unlink()
        (copy / "checkpoints/latest_checkpointed_iteration.txt").write_text("1")
    else:  # a file written into the HF folder after the commit
        (step / "actor/huggingface/added_tokens.json").write_text("{}")
    output = tmp_path / "export"
    assert main(["export", "--checkpoint", str(step), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert reason in err and "field '--checkpoint'" in err and not output.exists()


def test_a_step_without_weights_is_refused_naming_the_checkpoints_that_can_be(
    run: Path, tmp_path: Path, capsys, tiny_model_dir: Path
):
    copy = copy_run(run, tmp_path)
    checkpoints = copy / "checkpoints"
    for step in (1, 2):  # what verl's own retention left under an older medplay: data.pt and the marker
        shutil.rmtree(checkpoints / f"global_step_{step}/actor")
        save_step(checkpoints, step + 2, tiny_model_dir)
    output = tmp_path / "export"
    husk = checkpoints / "global_step_2"
    assert main(["export", "--checkpoint", str(husk), "--output", str(output)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"medplay export: error: {husk}: field '--checkpoint': checkpoint global_step_2 holds no ")
    assert err.endswith(f"refusing to export it; the checkpoints of {checkpoints} that can be exported: "
                        "global_step_4, global_step_3")  # fmt: skip
    assert not output.exists()


def test_a_root_skips_steps_without_weights_for_the_newest_real_one(run: Path, tmp_path: Path, capsys):
    copy = copy_run(run, tmp_path)
    shutil.rmtree(copy / "checkpoints/global_step_2/actor")
    output = tmp_path / "export"
    assert main(["export", "--checkpoint", str(copy / "checkpoints"), "--output", str(output)]) == 0
    out = capsys.readouterr().out
    assert "skipped global_step_2 holds no weights (no file under actor/" in out
    assert json.loads((output / "medplay_export.json").read_text())["step"] == 1


def test_no_verified_step_under_a_root_names_each_reason(run: Path, tmp_path: Path, capsys):
    copy = copy_run(run, tmp_path)
    for step in (1, 2):
        (copy / f"checkpoints/global_step_{step}/medplay_complete.json").unlink()
    assert main(["export", "--checkpoint", str(copy / "checkpoints"), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no checkpoint here can be exported: global_step_2 has no manifest" in err
    assert "global_step_1 is incomplete" in err


def test_an_output_that_holds_anything_is_refused_and_an_empty_one_is_used(run: Path, tmp_path: Path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    assert main(["export", "--checkpoint", str(run / "checkpoints"), "--output", str(taken)]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", "--checkpoint", str(run / "checkpoints/global_step_1"), "--output", str(empty)]) == 0
    assert (empty / "README.md").is_file() and (empty / "model.safetensors").is_file()


def test_a_checkpoint_away_from_its_run_says_what_is_missing(run: Path, tmp_path: Path, capsys):
    checkpoints = Path(shutil.copytree(run / "checkpoints", tmp_path / "elsewhere" / "checkpoints"))
    (checkpoints / "metrics.jsonl").unlink()
    output = tmp_path / "export"
    assert main(["export", "--checkpoint", str(checkpoints), "--output", str(output)]) == 0
    out = capsys.readouterr().out
    assert "not found, so not in the card: the run's config.yaml" in out and "evaluation scores" in out
    record = json.loads((output / "medplay_export.json").read_text())
    assert record["run"]["config"] is None and record["versions"]["training"] is None
    assert record["evaluation"] == {"validation": None, "benchmark": None}
    card = (output / "README.md").read_text()
    assert "No evaluation recorded" in card and "The run's config was not found" in card
    assert not (output / "training_config.yaml").exists()


def test_a_medplay_eval_of_the_checkpoint_goes_in_the_card_and_one_of_another_model_is_refused(
    run: Path, tmp_path: Path, tiny_model_dir: Path, capsys
):
    step = run / "checkpoints/global_step_2"
    evaluated = tmp_path / "eval"
    flags = ["--limit", "2", "--max-new-tokens", "4", "--backend", "transformers"]
    assert main(["eval", "--model", str(step), "--output", str(evaluated), *flags]) == 0
    scores = json.loads((evaluated / "eval.json").read_text())
    output = tmp_path / "export"
    assert main(["export", "--checkpoint", str(step), "--output", str(output), "--eval", str(evaluated)]) == 0
    benchmark = json.loads((output / "medplay_export.json").read_text())["evaluation"]["benchmark"]
    assert benchmark["notes"] == 2 and benchmark["scores"]["error_flag_accuracy"] == scores["error_flag_accuracy"]
    card = (output / "README.md").read_text()
    assert f"| error_flag_accuracy | {scores['error_flag_accuracy']:.4f} |" in card
    assert "baseline `always_correct`" in card
    other = tmp_path / "eval-other"
    assert main(["eval", "--model", str(tiny_model_dir), "--output", str(other), *flags]) == 0
    capsys.readouterr()
    refused = tmp_path / "export-other"
    assert main(["export", "--checkpoint", str(step), "--output", str(refused), "--eval", str(other)]) == 2
    err = capsys.readouterr().err
    assert f"{other / 'eval.json'}: field 'resolved_model': evaluated {tiny_model_dir}, not this checkpoint's model" in err
    assert not refused.exists()


def test_the_card_names_medec_as_its_bundled_source_does() -> None:
    source = (bundled_csv("MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv").parent / "SOURCE.md").read_text()
    for key in ("commit", "licence_url"):
        assert MEDEC[key] in source
    assert "(CC BY 4.0)" in source and "Findings of ACL 2025, pp. 22539" in source
    assert MEDEC["citation"].split(". 2025.")[0] in source


def test_a_base_model_prepared_by_medplay_gives_the_card_its_hub_id_and_licence(tmp_path: Path) -> None:
    from medical_team.models.prepare import SOURCE_MD, source_page
    from medical_team.models.registry import MODELS

    model = MODELS["smollm2-135m"]
    summary = {
        "tokens": {"eos": "<|im_end|>", "pad": "<|endoftext|>", "bos": None},
        "vocabulary_kind": "gpt2",
        "vocabulary": 49152,
        "chat_template_source": "the GGUF",
        "gguf_licence": "apache-2.0",
        "seconds": 1.0,
        "model_class": "LlamaForCausalLM",
        "parameters": 134515008,
    }
    (tmp_path / SOURCE_MD).write_text(source_page(model, summary, None))
    config = {"actor_rollout_ref": {"model": {"path": str(tmp_path)}}, "medplay": {"model": {"build_tiny": False}}}
    facts = base_model(config)
    assert (facts["hub_id"], facts["licence"], facts["licence_id"]) == (model.upstream, "Apache-2.0", "apache-2.0")
    record = {"base_model": facts, "files": {"lora_adapter": None}}
    header = front_matter(export_front_matter(record))
    assert header["license"] == "apache-2.0" and header["base_model"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    hub = base_model({"actor_rollout_ref": {"model": {"path": "Qwen/Qwen3-4B"}}, "medplay": {"model": {}}})
    assert (hub["hub_id"], hub["licence_id"]) == ("Qwen/Qwen3-4B", "other")  # a cached hub id: licence unknown here
