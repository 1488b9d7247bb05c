"""Every repository path a doc or a code comment cites exists, so no reference points outside the repo.

Read: every Markdown file (README.md, docs/, the bundled data's and test corpora's pages) whole, and
the comments and docstrings of the code (Python comments and docstrings; `#` comments of shell
scripts, YAML, the Makefile, the Dockerfile and the requirement files). A citation is:

- a path from a top-level folder of the repo (`docs/game.md`, `scripts/wheelhouse.py`, `configs/...`,
  `medical_team/...`, `tests/...`): it must exist. A glob (`configs/profile/*.yaml`) must match a
  file, braces (`{a,b}`) are expanded, and a placeholder segment (`<profile>`, `NAME`, `...`) only
  asks that the folder before it exists;
- a Python path from a folder of the package (`launcher/launch.py`, `game/cot.py`): some file of
  the repo ends with it;
- a bare Markdown name (`game.md`): a file of that name is in the repo, or the product writes a
  page of that name (a string constant of the package, such as `eval.md`);
- a Markdown link (`[text](judge.md#section)`): the target exists next to the page, and its anchor
  is one of the target's headings;
- a section named after a doc path (`docs/game.md, "Metrics"`): a heading of the doc starts with
  that name.

Paths outside the tree (`build/...`, `$OUT/...`, `/checkpoints/...`, URLs, another project's
`verl/trainer/...`) are not read as citations: a citation starts at a word boundary that is not
part of a longer path or variable.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_FOLDERS = {".git", ".venv", "build", "outputs", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"}
TOP_FOLDERS = ("docs", "scripts", "medical_team", "configs", "tests", "entrypoints", "docker", "requirements")
HASH_COMMENTED = {".sh", ".yaml", ".yml", ".toml", ".conf", ".in", ".lock", ".txt"}
HASH_COMMENTED_NAMES = {"Makefile", "Dockerfile", "run"}
# Segments that stand for a name the reader picks (`configs/profile/NAME.yaml`).
PLACEHOLDERS = {"NAME", "FILE", "DIR", "PATH", "PROFILE", "STEP", "N"}
# Pages the product writes under a name built at run time: `medplay compare` writes `<stem>.md`, stem
# `compare` unless `--stem` says otherwise (medical_team/cli/compare.py).
PAGES_NAMED_AT_RUN_TIME = {"compare.md"}

_START = r"(?<![\w./$~@:%=-])"  # not inside a longer path, a variable, a URL or an option value
ROOTED = re.compile(_START + r"(?:" + "|".join(TOP_FOLDERS) + r")/[^\s`'\"()\[\]|,;]*")
PACKAGE_RELATIVE = re.compile(_START + r"(([a-z_]+)(?:/[\w.-]+)+\.py)\b")
BARE_MARKDOWN = re.compile(_START + r"([\w.-]+\.md)\b(?![/\w])")
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED_SECTION = re.compile(r"(docs/[\w/.-]+\.md)(?:#[\w-]+)?,? (?:section )?\"([^\"\n]+)\"")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
STATEMENT_STARTS = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Citation:
    source: str  # the citing file, relative to the root
    line: int
    text: str  # as written
    problem: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.text!r}: {self.problem}"


def tree_files(root: Path) -> list[Path]:
    """Every file of the tree, without version control, virtual environments and build outputs."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(s for s in subfolders if s not in SKIPPED_FOLDERS and not s.endswith(".egg-info"))
        found.extend(Path(folder) / name for name in sorted(names))
    return found


def python_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring (a string that is a statement of its own) of a Python source."""
    chunks = []
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type != tokenize.NL]
    previous = None  # the last token that is not a comment
    for index, token in enumerate(tokens):
        if token.type == tokenize.COMMENT:
            chunks.append((token.start[0], token.string))
            continue
        if token.type == tokenize.STRING and (previous is None or previous.type in STATEMENT_STARTS):
            following = index + 1
            while following < len(tokens) and tokens[following].type == tokenize.COMMENT:
                following += 1
            after = tokens[following] if following < len(tokens) else None
            if after is None or after.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                chunks.append((token.start[0], token.string))
        previous = token
    return chunks


def hash_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every `#` comment of a shell script, YAML file, Makefile or Dockerfile."""
    chunks = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.search(r"(?:^|\s)(#.*)", line)
        if match:
            chunks.append((number, match.group(1)))
    return chunks


def cited_text(path: Path) -> list[tuple[int, str]]:
    """The parts of a file that may cite paths: a Markdown page whole, a source file's comments."""
    if path.suffix == ".md":
        return [(1, path.read_text(encoding="utf-8"))]
    if path.suffix == ".py":
        return python_comments(path.read_text(encoding="utf-8"))
    if path.suffix in HASH_COMMENTED or path.name in HASH_COMMENTED_NAMES:
        return hash_comments(path.read_text(encoding="utf-8"))
    return []


@functools.cache
def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown page's headings (lower case, punctuation dropped, spaces as hyphens)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    anchors = set()
    for heading in HEADING.findall(text):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return anchors


@functools.cache
def headings(page: Path) -> set[str]:
    """A page's heading texts, with Markdown emphasis and code marks dropped."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {re.sub(r"[`*_]", "", heading) for heading in HEADING.findall(text)}


def written_pages(root: Path) -> set[str]:
    """Markdown names the product writes: quoted names ending in .md in the package's code (`EVAL_MD = "eval.md"`)."""
    names: set[str] = set()
    for path in sorted((root / "medical_team").rglob("*.py")):
        names.update(re.findall(r"[\"']([\w.-]+\.md)[\"']", path.read_text(encoding="utf-8")))
    return names


def expand_braces(text: str) -> list[str]:
    """Every path a text with brace groups stands for (`{b,c}` gives `b` and `c`; no nesting)."""
    parts = re.split(r"\{([^{}]*)\}", text)
    literals, choices = parts[0::2], [group.split(",") for group in parts[1::2]]
    return [
        "".join(itertools.chain.from_iterable(zip(literals, picked))) + literals[-1]
        for picked in itertools.product(*choices)
    ]


def rooted_problem(root: Path, written: str) -> str | None:
    """Why a path from a top-level folder does not resolve (None when it does)."""
    path = re.split(r"::|#", written)[0].rstrip(".,:;!?'")
    for candidate in expand_braces(path):
        segments = candidate.rstrip("/").split("/")
        for index, segment in enumerate(segments):
            stem = segment.split(".")[0]
            if "<" in segment or "..." in segment or "…" in segment or stem in PLACEHOLDERS:
                folder = root.joinpath(*segments[:index])
                if not folder.is_dir():
                    return f"no folder {folder.relative_to(root)}/ (before the placeholder)"
                break
            if "*" in segment or "?" in segment:
                if not list(root.glob("/".join(segments))):
                    return "the glob matches no file"
                break
        else:
            if not (root / candidate).exists():
                return "no such file or folder in the repo"
    return None


@dataclass(frozen=True)
class Tree:
    """What a citation is checked against: the files of the tree, the pages the product writes, the package's folders."""

    root: Path
    names: frozenset[str]  # file names
    paths: frozenset[str]  # file paths relative to the root
    written: frozenset[str]  # page names the product writes
    package_folders: frozenset[str]  # folder names inside the package (`task_runner`, `game`, `cpu`, ...)

    @classmethod
    def read(cls, root: Path) -> Tree:
        """The tree under `root`."""
        files = tree_files(root)
        package = root / "medical_team"
        written = (written_pages(root) if package.is_dir() else set()) | PAGES_NAMED_AT_RUN_TIME
        folders = {folder.name for folder in package.rglob("*") if folder.is_dir()} - {"__pycache__", *TOP_FOLDERS}
        return cls(
            root=root,
            names=frozenset(path.name for path in files),
            paths=frozenset(path.relative_to(root).as_posix() for path in files),
            written=frozenset(written),
            package_folders=frozenset(folders),
        )

    def problems(self, page: Path, chunk: str) -> Iterator[tuple[int, str, str]]:
        """(offset in `chunk`, citation, problem) of each citation in `chunk`, a part of `page`, that does not resolve."""
        for match in ROOTED.finditer(chunk):
            problem = rooted_problem(self.root, match.group(0))
            if problem:
                yield match.start(), match.group(0).rstrip(".,:;!?'"), problem
        for match in PACKAGE_RELATIVE.finditer(chunk):
            cited = match.group(1)
            if match.group(2) not in self.package_folders:
                continue  # another project's path (`verl/trainer/...`), or a rooted one read above
            if not any(path == cited or path.endswith("/" + cited) for path in self.paths):
                yield match.start(), cited, "no file of the repo ends with this path"
        links = list(LINK.finditer(chunk)) if page.suffix == ".md" else []
        for match in BARE_MARKDOWN.finditer(chunk):
            name = match.group(1)
            in_link = any(link.start(1) <= match.start() < link.end(1) for link in links)
            if not in_link and name not in self.names and name not in self.written:
                yield match.start(), name, "no page of this name in the repo, and the product writes none"
        for match in links:
            target = match.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            if not linked.exists():
                yield match.start(), target, "the link's target is not in the repo"
            elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
                yield match.start(), target, "the linked page has no heading with this anchor"
        for match in NAMED_SECTION.finditer(chunk):
            cited_page, section = self.root / match.group(1), match.group(2)
            if cited_page.is_file() and not any(heading.startswith(section) for heading in headings(cited_page)):
                yield match.start(), match.group(0), "no heading of the page starts with this name"


def find_citations(root: Path) -> list[Citation]:
    """Every citation of a repository path in the tree under `root` that does not resolve."""
    tree = Tree.read(root)
    found = []
    for path in tree_files(root):
        try:
            chunks = cited_text(path)
        except (UnicodeDecodeError, SyntaxError, tokenize.TokenError):
            continue
        for first_line, chunk in chunks:
            for offset, text, problem in tree.problems(path, chunk):
                line = first_line + chunk.count("\n", 0, offset)
                found.append(Citation(path.relative_to(root).as_posix(), line, text, problem))
    return found


def test_every_cited_path_is_in_the_repo() -> None:
    problems = find_citations(ROOT)
    assert not problems, "citations of paths that are not in the repo:\n" + "\n".join(map(str, problems))


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    """A repo of a few files whose citations all resolve."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "game.md").write_text("# The game\n\n## Metrics\n\nSee [rewards](#metrics).\n")
    (tmp_path / "medical_team" / "game").mkdir(parents=True)
    (tmp_path / "medical_team" / "launcher").mkdir()
    (tmp_path / "medical_team" / "game" / "cot.py").write_text('"""The format of docs/game.md ("Metrics")."""\n')
    (tmp_path / "README.md").write_text(
        "Read `docs/game.md`, [the metrics](docs/game.md#metrics), `game/cot.py` and `game.md`;\n"
        "outputs go to build/run/report.md and $OUT/docs/x.md (not citations).\n"
    )
    return tmp_path


def test_a_tree_whose_citations_resolve_passes(small_repo: Path) -> None:
    assert find_citations(small_repo) == []


@pytest.mark.parametrize(
    ("file", "text", "cited"),
    [
        ("docs/extra.md", "The spec (`docs/spec.md`) says so.\n", "docs/spec.md"),
        ("docs/extra.md", "See [the rules](rules.md).\n", "rules.md"),
        ("docs/extra.md", "See [metrics](game.md#no-such-section).\n", "game.md#no-such-section"),
        ("docs/extra.md", 'As docs/game.md, "Rewards" says.\n', 'docs/game.md, "Rewards"'),
        ("README.md", "Run scripts/missing.py first.\n", "scripts/missing.py"),
        ("README.md", "Profiles: configs/profile/*.yaml.\n", "configs/profile/*.yaml"),
        ("medical_team/game/cot.py", '"""Tags as GAME.md writes them."""\n', "GAME.md"),
        ("medical_team/game/cot.py", "x = 1  # see tests/game/test_cot.py\n", "tests/game/test_cot.py"),
        ("medical_team/game/cot.py", '"""Called by launcher/launch.py."""\n', "launcher/launch.py"),
        ("configs/medplay.yaml", "# KL coefficient: docs/tuning.md\n", "docs/tuning.md"),
    ],
)
def test_a_made_up_citation_is_caught(small_repo: Path, file: str, text: str, cited: str) -> None:
    target = small_repo / file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    problems = find_citations(small_repo)
    assert [(p.source, p.text) for p in problems] == [(file, cited)], problems
