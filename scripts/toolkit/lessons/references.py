"""The paths and modules a project's files name that the project does not have: each file read as text.

Three kinds of name are looked for: a path under one of the project's folders (`scripts/README.md`), a Python
module of the project (`python -m scripts.watch`, `scripts.toolkit.check`), and a Markdown link's target
(relative to its file). A path or file name that the reader completes from context (`toolkit/dataset.py`,
`lessons.toml`) counts if some file of the project ends with it. Web addresses, the labs repository beside a
student's project (`../nextia-learning-labs/...`) and what a run creates (`.lab/`, `.env`) are not the project's.
"""

import re
from collections.abc import Iterator
from pathlib import Path

from scripts.toolkit.lessons.student_files import PACKAGES, all_files

TEXT = (".py", ".md", ".toml", ".example", ".gitignore", ".txt", ".sql")
FOLDERS = "|".join((*PACKAGES, "snapshots"))
PATH = re.compile(rf"(?<![\w./-])((?:{FOLDERS})/[\w./-]*[\w/]|[\w-]+(?:/[\w.-]+)*\.(?:py|md|toml|sql)\b)")
# The lab's own tools live under scripts/ and tests/: a module of theirs named in a project's text must be there.
# (A student's project has all of ticket_api/ and simulator/, whose dotted names are also loggers' names.)
MODULE = re.compile(rf"(?<![\w./-])((?:scripts|tests)(?:\.[a-z_]\w*)+|(?<=python -m )(?:{'|'.join(PACKAGES)})\b[\w.]*)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
NOT_THE_PROJECT = ("http://", "https://", "../nextia-learning-labs", ".lab/", ".env")


def missing_references(tree: Path) -> list[str]:
    """`file:line: name` for each path or module a project's text files name that the project does not have."""
    files = all_files(tree)
    problems = []
    for file in sorted(name for name in files if name.endswith(TEXT)):
        for number, line in enumerate((tree / file).read_text(errors="replace").splitlines(), 1):
            for name in dict.fromkeys(_names(line, file)):
                if not _found(tree, files, name):
                    problems.append(f"{file}:{number}: {name}")
    return problems


def _names(line: str, file: str) -> Iterator[str]:
    for match in PATH.finditer(line):
        yield match[1]
    for match in MODULE.finditer(line):
        yield match[1]
    if file.endswith(".md"):
        for match in LINK.finditer(line):
            if not match[1].startswith(NOT_THE_PROJECT):
                yield (Path(file).parent / match[1]).as_posix()


def _found(tree: Path, files: set[str], name: str) -> bool:
    if name.startswith(NOT_THE_PROJECT) or "://" in name:
        return True
    if "/" not in name and "." in name and not name.endswith(TEXT):
        return _module_found(tree, name)
    path = Path(name)
    if ".." in path.parts:
        resolved = (tree / path).resolve()
        return resolved.is_relative_to(tree.resolve()) and resolved.exists()
    relative = path.as_posix().rstrip("/")
    return (tree / relative).exists() or any(f == relative or f.endswith("/" + relative) for f in files)


def _module_found(tree: Path, dotted: str) -> bool:
    """A dotted name is found when its longest prefix that is a module is a file (the rest are its attributes)."""
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        folder = tree.joinpath(*parts[:length])
        if folder.with_suffix(".py").is_file():
            return True
        if folder.is_dir():
            return length == len(parts)
    return False
