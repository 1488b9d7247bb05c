"""The chain-of-thought format parser: a table of crafted responses and a hypothesis fuzz of every rule."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medical_team.game.cot import FormatRule, parse_response

R = FormatRule
OK = "The dose looks high. </think> <answer> verdict: ERROR </answer>"

# (response, exact set of violated rules, expected answer)
CASES: list[tuple[str, set[FormatRule], str]] = [
    (OK, set(), "verdict: ERROR"),
    ("r</think><answer>a</answer>", set(), "a"),
    ("  multi\nline reasoning\n</think>\n\n<answer>\nline 1\nline 2\n</answer>\n \t", set(), "line 1\nline 2"),
    ("r </think> <answer> a </answer>   \n", set(), "a"),
    ("reasoning only, never closed", {R.NO_THINK_CLOSE, R.NO_ANSWER_SPAN}, "reasoning only, never closed"),
    ("", {R.NO_THINK_CLOSE, R.NO_ANSWER_SPAN}, ""),
    ("r <answer> a </answer>", {R.NO_THINK_CLOSE}, "a"),
    ("r </think> a plain answer", {R.NO_ANSWER_SPAN}, "r </think> a plain answer"),
    ("r </think> <answer> a never closed", {R.NO_ANSWER_SPAN}, "r </think> <answer> a never closed"),
    ("r </think> a </answer>", {R.NO_ANSWER_SPAN}, "r </think> a </answer>"),
    ("<think> r </think> <answer> a </answer>", {R.THINK_REOPENED}, "a"),
    ("r </think> <answer> a <think> b </answer>", {R.THINK_REOPENED}, "a <think> b"),
    ("  \n </think> <answer> a </answer>", {R.EMPTY_REASONING}, "a"),
    ("</think> <answer> a </answer>", {R.EMPTY_REASONING, R.THINK_CLOSE_AT_START}, "a"),
    ("</think>r <answer> a </answer>", {R.THINK_CLOSE_AT_START, R.EMPTY_REASONING, R.TEXT_BEFORE_ANSWER}, "a"),
    ("r </think> <answer> \n </answer>", {R.EMPTY_ANSWER}, ""),
    ("r </think> <answer></answer>", {R.EMPTY_ANSWER}, ""),
    ("r </think> </think> <answer> a </answer>", {R.REPEATED_TAG, R.TEXT_BEFORE_ANSWER}, "a"),
    ("r </think> <answer> a </answer> </answer>", {R.REPEATED_TAG}, "a"),
    ("r </think> <answer> <answer> a </answer>", {R.REPEATED_TAG}, "<answer> a"),
    ("r </think> <answer> a </answer> <answer> b </answer>", {R.REPEATED_TAG, R.TAGS_OUT_OF_ORDER}, "a"),
    ("r <answer> a </answer> </think>", {R.TAGS_OUT_OF_ORDER, R.TEXT_AFTER_ANSWER}, "a"),
    (
        "r </answer> </think> <answer> a",
        {R.TAGS_OUT_OF_ORDER, R.NO_ANSWER_SPAN, R.TEXT_AFTER_ANSWER},
        "r </answer> </think> <answer> a",
    ),
    ("r </think> <answer> a </think> </answer>", {R.REPEATED_TAG, R.TAGS_OUT_OF_ORDER}, "a </think>"),
    ("r </think> so the answer is: <answer> a </answer>", {R.TEXT_BEFORE_ANSWER}, "a"),
    ("r </think> <answer> a </answer> Hope this helps!", {R.TEXT_AFTER_ANSWER}, "a"),
    ("r </think> <answer> a </answer> <|im_end|>", {R.TEXT_AFTER_ANSWER}, "a"),
    ("r </THINK> <Answer> a </Answer>", {R.NO_THINK_CLOSE, R.NO_ANSWER_SPAN}, "r </THINK> <Answer> a </Answer>"),
    (
        "<think></think><answer></answer>",
        {R.THINK_REOPENED, R.EMPTY_ANSWER},
        "",
    ),
    (
        "r <answer> a",
        {R.NO_THINK_CLOSE, R.NO_ANSWER_SPAN},
        "r <answer> a",
    ),
]


def test_table_covers_every_rule_with_enough_cases() -> None:
    assert len(CASES) >= 25
    assert set().union(*(rules for _, rules, _ in CASES)) == set(FormatRule)


@pytest.mark.parametrize(("text", "rules", "answer"), CASES)
def test_crafted_response(text: str, rules: set[FormatRule], answer: str) -> None:
    parsed = parse_response(text)
    assert set(parsed.violations) == rules
    assert parsed.compliant is (not rules)
    assert parsed.answer == answer


def test_reasoning_is_the_text_before_the_first_think_close() -> None:
    parsed = parse_response("  step one\nstep two </think> <answer> a </answer>")
    assert parsed.reasoning == "step one\nstep two" and parsed.has_answer_span


# ---------------------------------------------------------------- fuzz
TAGS = ("<think>", "</think>", "<answer>", "</answer>")
_ORACLE = re.compile(r"(?P<r>.*?)</think>\s*<answer>(?P<a>.*?)</answer>\s*", re.DOTALL)


def oracle_compliant(text: str) -> bool:
    """The format of docs/game.md, written independently of the parser: one shape, tags once, nothing empty."""
    if "<think>" in text or any(text.count(tag) != 1 for tag in TAGS[1:]):
        return False
    match = _ORACLE.fullmatch(text)
    return bool(match and match["r"].strip() and match["a"].strip() and not text.startswith("</think>"))


PIECES = st.sampled_from([*TAGS, "<", ">", "/", "think", "answer", " ", "\n", "\t", "x", "verdict: ERROR", "é", "</"])
TAGGY_TEXT = st.lists(PIECES, max_size=14).map("".join)
# text that contains no tag (and cannot form one across a join: no '<')
PLAIN = st.text(st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=40)
CONTENT = PLAIN.filter(lambda s: s.strip())
SPACE = st.text(" \n\t\r", max_size=3)
JUNK = st.sampled_from(["so:", "x", "Answer follows", "**", "<|im_end|>", "1."])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(TAGGY_TEXT, st.text(max_size=60)))
def test_fuzz_never_raises_and_agrees_with_the_oracle(text: str) -> None:
    parsed = parse_response(text)
    assert parsed.compliant is oracle_compliant(text)
    assert len(set(parsed.violations)) == len(parsed.violations)
    if not parsed.has_answer_span:
        assert parsed.answer == text.strip()


@settings(max_examples=500, deadline=None)
@given(reasoning=CONTENT, answer=CONTENT, s1=SPACE, s2=SPACE, s3=SPACE)
def test_fuzz_constructed_compliant_texts(reasoning: str, answer: str, s1: str, s2: str, s3: str) -> None:
    text = f"{reasoning}{s1}</think>{s2}<answer>{answer}</answer>{s3}"
    parsed = parse_response(text)
    assert parsed.compliant, parsed.violations
    assert parsed.answer == answer.strip() and parsed.reasoning == reasoning.strip()


MUTATIONS = {
    R.NO_THINK_CLOSE: lambda r, a, w, j: f"{r}{w}<answer>{a}</answer>",
    R.NO_ANSWER_SPAN: lambda r, a, w, j: f"{r}</think>{w}{a}",
    R.THINK_REOPENED: lambda r, a, w, j: f"<think>{w}{r}</think><answer>{a}</answer>",
    R.EMPTY_REASONING: lambda r, a, w, j: f"{w}</think><answer>{a}</answer>",
    R.EMPTY_ANSWER: lambda r, a, w, j: f"{r}</think><answer>{w}</answer>",
    R.REPEATED_TAG: lambda r, a, w, j: f"{r}</think>{w}</think><answer>{a}</answer>",
    R.TAGS_OUT_OF_ORDER: lambda r, a, w, j: f"{r}<answer>{a}</answer>{w}</think>",
    R.THINK_CLOSE_AT_START: lambda r, a, w, j: f"</think>{r}<answer>{a}</answer>",
    R.TEXT_BEFORE_ANSWER: lambda r, a, w, j: f"{r}</think>{w}{j}{w}<answer>{a}</answer>",
    R.TEXT_AFTER_ANSWER: lambda r, a, w, j: f"{r}</think><answer>{a}</answer>{w}{j}",
}


def test_every_rule_has_a_mutation() -> None:
    assert set(MUTATIONS) == set(FormatRule)


@settings(max_examples=600, deadline=None)
@given(rule=st.sampled_from(list(FormatRule)), reasoning=CONTENT, answer=CONTENT, space=SPACE, junk=JUNK)
def test_fuzz_mutations_are_flagged(rule: FormatRule, reasoning: str, answer: str, space: str, junk: str) -> None:
    text = MUTATIONS[rule](reasoning, answer, space, junk)
    parsed = parse_response(text)
    assert rule in parsed.violations
    assert not parsed.compliant and not oracle_compliant(text)


def oracle_rules(text: str) -> set[FormatRule]:
    """Each rule of docs/game.md checked on its own from all tag positions (a second, slower implementation)."""
    occ = {tag: [m.start() for m in re.finditer(re.escape(tag), text)] for tag in TAGS}
    close, opening, end = occ["</think>"], occ["<answer>"], occ["</answer>"]
    start = opening[0] + len("<answer>") if opening else -1
    span = next(((start, b) for b in end if opening and b >= start), None)
    ranks = [rank for _, rank in sorted((p, r) for r, tag in enumerate(TAGS[1:]) for p in occ[tag])]
    checks = {
        R.NO_THINK_CLOSE: not close,
        R.NO_ANSWER_SPAN: span is None,
        R.THINK_REOPENED: bool(occ["<think>"]),
        R.EMPTY_REASONING: bool(close) and not text[: close[0]].strip(),
        R.EMPTY_ANSWER: span is not None and not text[span[0] : span[1]].strip(),
        R.REPEATED_TAG: any(len(occ[tag]) > 1 for tag in TAGS[1:]),
        R.TAGS_OUT_OF_ORDER: ranks != sorted(ranks),
        R.THINK_CLOSE_AT_START: close[:1] == [0],
        R.TEXT_BEFORE_ANSWER: bool(close and opening and close[0] < opening[0])
        and bool(text[close[0] + len("</think>") : opening[0]].strip()),
        R.TEXT_AFTER_ANSWER: bool(end) and bool(text[end[-1] + len("</answer>") :].strip()),
    }
    return {rule for rule, broken in checks.items() if broken}


@settings(max_examples=800, deadline=None)
@given(st.one_of(TAGGY_TEXT, st.lists(PIECES, max_size=30).map("".join)))
def test_fuzz_each_rule_agrees_with_a_second_implementation(text: str) -> None:
    assert set(parse_response(text).violations) == oracle_rules(text)
