"""`medplay judge audit`: score a judge against gold MEDEC pairs, write audit.json + audit.md.

medplay judge audit --backend rules --output build/audit-rules
medplay judge audit --backend openai --url http://127.0.0.1:8001/v1 --model medgemma --output build/audit
medplay judge audit --url http://127.0.0.1:8100 --output build/audit-server
"""

from __future__ import annotations

import argparse
from pathlib import Path

from medical_team.cli.arg_types import int_at_least
from medical_team.cli.judge_options import JudgeOptions, judge_settings
from medical_team.common.errors import UserInputError
from medical_team.judge.judge_kinds import REACHABLE_BACKENDS

AUDIT_JUDGE = JudgeOptions(
    REACHABLE_BACKENDS, None, "judge backend (default: http, a running judge server, with --url; rules without it)"
)


def _judge(args: argparse.Namespace):
    """The judge the options name, its description for the report, and its batch size."""
    from medical_team.judge.backends import build_judge

    settings, runtime = judge_settings(args, AUDIT_JUDGE, args.backend or ("http" if args.url else "rules"))
    try:
        judge = build_judge(settings, runtime)
    except (OSError, ValueError) as error:
        raise UserInputError(f"cannot build the judge: {str(error).splitlines()[0]}", field="--model") from None
    return judge, settings.kind.describe(vars(settings)), settings.batch_size


def run_audit_command(args: argparse.Namespace) -> int:
    """Build the gold set and the judge, ask it, write the audit; exit 1 with --require-pass when it fails."""
    from medical_team.judge.audit import AuditThresholds, run_audit
    from medical_team.judge.audit_report import AUDIT_JSON, AUDIT_MD, audit_document, write_audit
    from medical_team.judge.gold import build_gold, medec_seeds
    from medical_team.judge.outage import JudgeUnavailableError

    for path in args.input or ():
        if not Path(path).is_file():
            raise UserInputError(f"MEDEC CSV {path} does not exist", field="--input")
    judge, name, batch_size = _judge(args)
    items = build_gold(medec_seeds(args.split, args.input or (), args.seed), args.pairs)
    try:
        run = run_audit(judge, items, batch_size)
    except JudgeUnavailableError as error:
        raise UserInputError(str(error), field="--url") from None
    source = {"source": ", ".join(map(str, args.input)) if args.input else "bundled MEDEC-MS validation file"}
    document = audit_document(run, name, {**source, "split": args.split, "seed": args.seed}, AuditThresholds())
    output = Path(args.output)
    write_audit(output, run, document)
    m = document["metrics"]
    print(
        f"judge audit ({name}): {m['items']} items, error_present accuracy {m['error_present']['accuracy']:.3f} "
        f"(precision {m['error_present']['precision']:.3f}, recall {m['error_present']['recall']:.3f}), "
        f"faithful accuracy {m['faithful']['accuracy']:.3f}, parse errors {m['parse_error_rate']:.3f}"
    )
    print("passed" if document["passed"] else "below the bar for training: " + "; ".join(document["failures"]))
    print(f"wrote {output / AUDIT_JSON} and {output / AUDIT_MD}")
    return 1 if args.require_pass and not document["passed"] else 0


def add_audit_parser(actions: argparse._SubParsersAction) -> None:
    """Register `medplay judge audit`."""
    audit = actions.add_parser(
        "audit",
        help="score a judge against gold MEDEC pairs (audit.json, audit.md)",
        description="Score a judge on requests whose truth MEDEC alone settles (docs/judge.md, 'Judge audit').",
    )
    audit.add_argument("--output", required=True, metavar="DIR", help="directory for audit.json, audit.md")
    AUDIT_JUDGE.add_to(audit)
    audit.add_argument("--input", nargs="+", metavar="CSV", help="MEDEC CSVs (default: the bundled validation file)")
    audit.add_argument("--split", choices=("train", "val", "all"), default="val", help="seeds of this split (val)")
    audit.add_argument("--seed", type=int, default=0, help="the category draw and split seed of `medplay convert` (0)")
    audit.add_argument("--pairs", type=int_at_least(1), help="use only the first N error notes (7 gold items each)")
    audit.add_argument("--require-pass", action="store_true", help="exit 1 when the judge misses a threshold")
    audit.set_defaults(run=run_audit_command)
