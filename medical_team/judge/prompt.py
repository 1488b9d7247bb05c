"""The judge's chat prompt (seed, what is known of its error, rewrite) and the parser of its strict answer."""

from __future__ import annotations

import re

from medical_team.data.records import GameSeed
from medical_team.game.judging import JudgeRequest, JudgeVerdict
from medical_team.vocab import ERROR_TYPES, Label

Message = dict[str, str]

JUDGE_SYSTEM = (
    "You are a senior physician auditing clinical notes. You compare an ORIGINAL clinical note with a "
    "REWRITTEN version of it and establish two facts about the rewritten note.\n"
    "1. error_present: does the rewritten note contain a clinically significant medical error "
    f"(types: {', '.join(ERROR_TYPES)})?\n"
    "2. faithful: is it the same patient and the same case, changed only in the way the task below asked?\n"
    "Answer with exactly these lines and nothing else:\n"
    "error_present: yes or no\n"
    "faithful: yes or no\n"
    "error_sentence: <the erroneous sentence of the rewritten note, quoted exactly> (only when error_present is yes)"
)

_HARMFUL_KNOWN = (
    "The original note contains exactly one medical error ({error_type}).\n"
    'Erroneous sentence: "{error_sentence}"\n'
    'Correct statement: "{corrected_sentence}"\n'
    "Task given to the rewriter: keep this same error but make it harder to detect; add no other error."
)
_INJECT_KNOWN = (
    "The original note is medically correct.\n"
    "Task given to the rewriter: introduce exactly one clinically significant, hard-to-detect medical error; "
    "keep everything else correct."
)
_DECOY_KNOWN = (
    "The original note is medically correct.\n"
    "Task given to the rewriter: make the note look suspicious while keeping it completely medically correct."
)


def known_error_text(seed: GameSeed, intended_label: Label) -> str:
    """What is known of the seed's error and what the rewrite was asked to do, in words."""
    if seed.label is Label.ERROR:
        return _HARMFUL_KNOWN.format(
            error_type=seed.error_type or "type unknown",
            error_sentence=seed.error_sentence or "unknown",
            corrected_sentence=seed.corrected_sentence or "unknown",
        )
    return _INJECT_KNOWN if intended_label is Label.ERROR else _DECOY_KNOWN


def judge_messages(request: JudgeRequest) -> list[Message]:
    """The chat messages that ask a model to judge one rewrite."""
    user = (
        f"ORIGINAL NOTE:\n{request.seed.text}\n\n"
        f"WHAT IS KNOWN:\n{known_error_text(request.seed, request.intended_label)}\n\n"
        f"REWRITTEN NOTE:\n{request.rewrite}\n\n"
        "Answer in the required format."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


# One `key: value` line; markdown emphasis and backticks around keys are tolerated, nothing else is.
_FIELD = re.compile(
    r"^[ \t*`_]*(error_present|faithful|error_sentence)[ \t*`_]*:[ \t*`_]*(.*?)[ \t*`_]*$", re.IGNORECASE | re.MULTILINE
)
_YES_NO = {"yes": True, "no": False}


def parse_judge_output(text: str) -> JudgeVerdict:
    """Parse the strict answer format; anything else (missing, contradictory, not yes/no) is a parse-error tie."""
    values: dict[str, str] = {}
    for match in _FIELD.finditer(text):
        key, value = match.group(1).lower(), match.group(2).strip()
        if key in values and values[key].lower() != value.lower():
            return JudgeVerdict.as_tie(f"judge output: contradictory '{key}' lines", parse_error=True)
        values[key] = value
    flags: dict[str, bool] = {}
    for key in ("error_present", "faithful"):
        if key not in values:
            return JudgeVerdict.as_tie(f"judge output: no '{key}: yes|no' line", parse_error=True)
        answer = _YES_NO.get(values[key].lower().rstrip(".").strip())
        if answer is None:
            return JudgeVerdict.as_tie(f"judge output: '{key}' is neither yes nor no", parse_error=True)
        flags[key] = answer
    sentence = values.get("error_sentence", "").strip().strip('"').strip() or None
    if sentence is not None:  # a remote model's JSON may carry lone surrogates, which no response could encode
        sentence = sentence.encode("utf-8", "replace").decode("utf-8")
    return JudgeVerdict(
        error_present=flags["error_present"],
        faithful=flags["faithful"],
        error_sentence=sentence if flags["error_present"] else None,
        reason="model",
    )
