"""Rule-boundary mutation score: flip each comparison operator in advisor/engine/rules/*.py, one at
a time (`<` <-> `<=`, `>` <-> `>=`), run the engine tests against the mutant, and count the
mutants a test kills. A survivor is a threshold no rule example or test pins down: the rule could
move its boundary by one and nothing would notice.

The mutants run in a copy of the checkout (never the checkout itself), one at a time:

    .venv/bin/python scripts/bench_mutations.py                  # every rule module
    .venv/bin/python scripts/bench_mutations.py log_size.py      # one module
    .venv/bin/python scripts/bench_mutations.py --tests tests/engine/test_rule_examples.py

It prints one line per mutant (killed or SURVIVED, the file, line and the mutated line) and the
score. It takes minutes (each survivor runs the whole selection of tests)."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RULES = Path("advisor") / "engine" / "rules"
FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
#: What a copy needs to import the package, load the rule book and run the tests (the engine tests
#: unpack captures with the Ansible role's store.py).
COPIED = ("advisor", "rules", "tests", "pyproject.toml", "ansible")
DEFAULT_TESTS = ("tests/engine",)
#: The engine tests that decide (no golden files, no CLI): the quick selection, `--quick`.
QUICK_TESTS = ("tests/engine/test_rule_examples.py", "tests/engine/test_rule_cases.py",
               "tests/engine/test_inline_xattrs.py", "tests/engine/test_inode32.py",
               "tests/engine/test_log_reservation.py", "tests/engine/test_reason_numbers.py",
               "tests/engine/test_rule_boundaries.py")


@dataclass(frozen=True)
class Mutant:
    path: Path
    """The module, relative to the checkout."""
    line: int
    col: int
    old: str
    new: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        text = lines[self.line - 1]
        assert text[self.col:self.col + len(self.old)] == self.old, (self, text)
        lines[self.line - 1] = text[:self.col] + self.new + text[self.col + len(self.old):]
        return "".join(lines)

    def label(self, source: str) -> str:
        mutated = self.apply(source).splitlines()[self.line - 1].strip()
        return f"{self.path.name}:{self.line} {self.old} -> {self.new}: {mutated}"


def mutants(path: Path, source: str) -> list[Mutant]:
    """One mutant per comparison operator in the module."""
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.OP and tok.string in FLIP:
            found.append(Mutant(path, tok.start[0], tok.start[1], tok.string, FLIP[tok.string]))
    return found


def run_tests(copy: Path, tests: list[str], show: bool = False) -> bool:
    """True when the tests pass (the mutant survives); `show`: print a failure's summary."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow",
         # the copy's own temp folder: other pytest runs on the machine prune /tmp/pytest-of-*,
         # which would fail a test and count as a kill
         f"--basetemp={copy / '.pytest-tmp'}", *tests],
        cwd=copy, env=env, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1):
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise SystemExit(f"the tests did not run (exit {proc.returncode}): {' / '.join(tail)}")
    if show and proc.returncode:
        print("\n".join(proc.stdout.strip().splitlines()[-15:]))
    return proc.returncode == 0


def _deciding_first(tests: list[str]) -> list[str]:
    """The test files in `tests` (folders opened), the quick selection first: `-x` stops at the
    first failure, so a mutant a rule example or boundary test kills dies in seconds instead of
    after every CLI and golden test before them."""
    files = []
    for t in tests:
        found = sorted((REPO / t).rglob("test_*.py")) if (REPO / t).is_dir() else [REPO / t]
        files += [str(f.relative_to(REPO)) for f in found]
    order = {f: i for i, f in enumerate(QUICK_TESTS)}
    return sorted(dict.fromkeys(files), key=lambda f: order.get(f, len(order)))


def _stop(signum: int, frame: object) -> None:
    """SIGTERM ends the run like Ctrl-C: the running tests are killed, the copy removed."""
    raise SystemExit(f"stopped by signal {signum}")


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="rule modules (default: all)")
    parser.add_argument("--tests", action="append", help="test paths (default: tests/engine)")
    parser.add_argument("--quick", action="store_true",
                        help="only the engine tests that decide: " + " ".join(QUICK_TESTS))
    args = parser.parse_args()
    tests = args.tests or list(QUICK_TESTS if args.quick else DEFAULT_TESTS)
    tests = _deciding_first([t for t in tests if (REPO / t).exists()])
    names = args.modules or sorted(p.name for p in (REPO / RULES).glob("*.py"))
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        copy = Path(tmp)
        for name in COPIED:
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, copy / name)
        if not run_tests(copy, tests, show=True):
            raise SystemExit("the tests fail without any mutant: fix them first")
        killed, survived, started = 0, [], time.monotonic()
        for name in names:
            rel = RULES / name
            source = (copy / rel).read_text()  # the copy's: the checkout may change meanwhile
            for mutant in mutants(rel, source):
                (copy / rel).write_text(mutant.apply(source))
                try:
                    alive = run_tests(copy, tests)
                finally:
                    (copy / rel).write_text(source)
                label = mutant.label(source)
                print(("SURVIVED " if alive else "killed   ") + label, flush=True)
                if alive:
                    survived.append(label)
                else:
                    killed += 1
        total = killed + len(survived)
        print(f"\n{killed}/{total} mutants killed ({len(survived)} survived) by {' '.join(tests)}"
              f" in {time.monotonic() - started:.0f} s")
        for label in survived:
            print(f"  survivor: {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
