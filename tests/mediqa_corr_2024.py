"""The MEDIQA-CORR 2024 evaluation script's logic, re-implemented from its published text for the tests.

Source: abachaa/MEDIQA-CORR-2024, `evaluation/mediqa-corr-2024-eval-script-1-acc-rouge.ipynb.py` (the
ROUGE part of `-2-all-metrics.py` is the same). Written apart from medplay's scoring code on purpose: the
tests check that eval.json's `official` block equals what this computes from medplay's two files.
Its behaviour is kept as published, quirks included:
- the reference is read with `pandas.read_csv`; text ids, flags and sentence ids are the `str()` of the
  cells (a column with a blank cell reads as floats: `1.0`); only a non-string correction is cleaned
  (NaN -> `NA`), a string one is kept as it is;
- a run line is stripped, skipped unless it fully matches the line regex, then passed to `re.sub` as the
  *replacement* (the arguments are swapped), split on whitespace; leading and trailing `"` are removed from
  the correction while more than one character remains; flag `0` means correction `NA`;
- accuracies count the reference's ids (a missing prediction is wrong);
- corrections: `rouge.Rouge().get_scores(predictions, references)` (package 1.0.1) on the notes where both
  sides give a correction; composite = (sum of F + notes where both say `NA`) / reference notes; the
  subset check is the mean of F (numpy: nan when nothing is compared).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from rouge import Rouge

LINE_PATTERN = "[a-z0-9\\-]+\\s[0-9]+\\s\\-?[0-9]+\\s.+"
NA = "NA"


def parse_reference(path) -> tuple[dict, dict, dict]:
    """(corrections, flags, sentence ids) keyed by text id, as the script reads the reference CSV."""
    corrections, flags, sentence_ids = {}, {}, {}
    frame = pd.read_csv(path)
    for _, row in frame.iterrows():
        key = row["Text ID"]
        value = row["Corrected Sentence"]
        if not isinstance(value, str):
            value = NA if math.isnan(value) else str(value).replace("\n", " ").replace("\r", " ").strip()
        corrections[key] = value
        flags[key] = str(row["Error Flag"])
        sentence_ids[key] = str(row["Error Sentence ID"])
    return corrections, flags, sentence_ids


def parse_run(path) -> tuple[dict, dict, dict, int]:
    """(corrections, flags, sentence ids, skipped lines) as the script reads a run file; it may raise re.error."""
    corrections, flags, sentence_ids = {}, {}, {}
    skipped = 0
    with open(path) as handle:  # the script opens the run file with the locale's default encoding
        lines = handle.readlines()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if re.fullmatch(LINE_PATTERN, line) is None:
            skipped += 1
            continue
        line = re.sub("\\s+", line, " ")  # sic: pattern, replacement and string as the script passes them
        fields = line.split()
        key, flag, sentence = fields[0], fields[1], fields[2]
        correction = " ".join(fields[3:]).strip()
        flags[key] = flag
        sentence_ids[key] = sentence
        while len(correction) > 1 and correction[0] == '"':
            correction = correction[1:]
        while len(correction) > 1 and correction[-1] == '"':
            correction = correction[:-1]
        corrections[key] = NA if flag == "0" else correction
    return corrections, flags, sentence_ids, skipped


def score(submission_path, reference_path) -> dict:
    """Everything the script prints for these two files, keyed by the names it prints."""
    ref_corrections, ref_flags, ref_sentences = parse_reference(reference_path)
    run_corrections, run_flags, run_sentences, skipped = parse_run(submission_path)
    result = {
        "Error Flags Accuracy": sum(k in run_flags and run_flags[k] == v for k, v in ref_flags.items())
        / len(ref_flags),
        "Error Sentence Detection Accuracy": sum(
            k in run_sentences and run_sentences[k] == v for k, v in ref_sentences.items()
        )
        / len(ref_sentences),
    }
    counters = {
        "total_texts": 0,
        "reference_na": 0,
        "total_system_texts": 0,
        "system_provided_na": 0,
        "system_provided_correct_na": 0,
    }
    references, predictions = [], []
    for key, wanted in ref_corrections.items():
        counters["total_texts"] += 1
        if wanted == NA:
            counters["reference_na"] += 1
        if key not in run_corrections:
            continue
        counters["total_system_texts"] += 1
        given = run_corrections[key]
        if given == NA:
            counters["system_provided_na"] += 1
        if wanted == NA and given == NA:
            counters["system_provided_correct_na"] += 1
        elif wanted != NA and given != NA:
            references.append(wanted)
            predictions.append(given)
    rouge_scores = Rouge().get_scores(predictions, references)
    for metric, name in (("rouge-1", "R1F"), ("rouge-2", "R2F"), ("rouge-l", "RLF")):
        values = np.array([s[metric]["f"] for s in rouge_scores])
        with np.errstate(invalid="ignore", divide="ignore"):
            result[f"{name}_subset_check"] = values.mean() if len(values) else np.nan
        result[f"{name}C"] = (values.sum() + counters["system_provided_correct_na"]) / counters["total_texts"]
    result["counters"] = counters
    result["skipped_lines"] = skipped
    return result


def as_eval_json(script: dict) -> dict:
    """The script's figures in eval.json's form: floats as JSON has them, nan as null, skipped lines as `invalid_lines`."""
    block = {}
    for name, value in script.items():
        if name == "skipped_lines":
            block["invalid_lines"] = value
        elif name == "counters":
            block[name] = dict(value)
        else:
            block[name] = None if math.isnan(value) else float(value)
    return block


def official_part(official: dict) -> dict:
    """eval.json's `official` block without its description, for comparison with `as_eval_json`."""
    return {name: value for name, value in official.items() if name != "scorer"}
