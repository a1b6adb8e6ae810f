"""`xfs-advisor completion bash|zsh` and `xfs-advisor manpage`: generated from the parser the tool
runs with, checked by the shells and by groff/man themselves."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.commands.completion import parsers
from advisor.commands.parser import COMMANDS, build_parser
from advisor.commands.schema import SCHEMAS
from tests.conftest import require
from tests.engine.test_cli import cli


def generated(*argv: str) -> str:
    proc = cli(*argv)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "xfs-advisor.bash"
    path.write_text(generated("completion", "bash"))
    return path


def complete_bash(script: Path, line: str, cwd: Path | None = None) -> list[str]:
    """What bash offers for the last word of `line` (empty after a trailing space), asking the
    function that `complete -p xfs-advisor` names, as bash itself would on tab."""
    words = line.split() + ([""] if line.endswith(" ") else [])
    program = f"""
        source {shlex.quote(str(script))}
        spec=$(complete -p xfs-advisor) || exit 3
        fn=$(sed -E 's/.* -F ([^ ]+) .*/\\1/' <<< "$spec")
        COMP_WORDS=({" ".join(shlex.quote(w) for w in words)})
        COMP_CWORD={len(words) - 1}
        COMP_LINE={shlex.quote(line)}
        COMP_POINT=${{#COMP_LINE}}
        COMPREPLY=()
        "$fn" xfs-advisor {shlex.quote(words[-1])} {shlex.quote(words[-2])}
        printf '%s\\n' "${{COMPREPLY[@]}}"
    """
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True,
                          text=True, cwd=cwd, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return sorted(w.strip() for w in proc.stdout.splitlines() if w.strip())


def test_bash_completes_every_subcommand(bash_script: Path) -> None:
    assert complete_bash(bash_script, "xfs-advisor ") == sorted(COMMANDS)
    assert complete_bash(bash_script, "xfs-advisor pro") == ["profile", "propose"]


def test_bash_completes_flags_and_choices(bash_script: Path) -> None:
    assert complete_bash(bash_script, "xfs-advisor audit --fa") == ["--fail-on"]
    assert complete_bash(bash_script, "xfs-advisor schema ") == sorted(SCHEMAS)
    assert complete_bash(bash_script, "xfs-advisor completion ") == ["bash", "zsh"]
    flags = complete_bash(bash_script, "xfs-advisor --")
    assert {"--json", "--sysroot", "--version", "--device", "--workload"} <= set(flags)


def test_bash_completes_file_names_for_file_arguments(bash_script: Path, tmp_path: Path) -> None:
    (tmp_path / "answers.toml").write_text("")
    (tmp_path / "captures").mkdir()
    offered = complete_bash(bash_script, "xfs-advisor propose --workload ", cwd=tmp_path)
    assert "answers.toml" in offered
    # DIR arguments offer folders only.
    assert complete_bash(bash_script, "xfs-advisor --sysroot ", cwd=tmp_path) == ["captures"]


def test_zsh_script_is_valid_and_registers_for_xfs_advisor(tmp_path: Path) -> None:
    zsh = shutil.which("zsh")
    require(zsh is not None, "needs zsh (bootstrap installs it)")
    assert zsh is not None
    text = generated("completion", "zsh")
    assert text.startswith("#compdef xfs-advisor\n")
    fpath = tmp_path / "functions"
    fpath.mkdir()
    (fpath / "_xfs-advisor").write_text(text)
    check = subprocess.run([zsh, "-n", str(fpath / "_xfs-advisor")], capture_output=True,
                           text=True, timeout=30, check=False)
    assert check.returncode == 0, check.stderr
    # compinit reads the #compdef line from fpath, as a zsh installation would.
    program = (f"fpath=({shlex.quote(str(fpath))} $fpath); autoload -U compinit; "
               "compinit -u -D; print -r -- ${_comps[xfs-advisor]}")
    proc = subprocess.run([zsh, "-f", "-c", program], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "HOME": str(tmp_path)}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "_xfs-advisor"
    listed = re.search(r"_commands=\((.*?)\n  \)", text, re.S)
    assert listed is not None
    names = {line.strip().split(":", 1)[0] for line in listed.group(1).strip().splitlines()}
    assert names == set(COMMANDS)


@pytest.fixture(scope="module")
def manpage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("man") / "xfs-advisor.1"
    path.write_text(generated("manpage"))
    return path


def test_manpage_renders_without_warnings(manpage: Path) -> None:
    require(shutil.which("groff") is not None, "needs groff (bootstrap installs groff-base)")
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(manpage)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def rendered(manpage: Path) -> str:
    require(shutil.which("man") is not None, "needs man (bootstrap installs man-db)")
    env = {**os.environ, "LC_ALL": "C.UTF-8", "MANWIDTH": "80", "MANPAGER": "cat",
           "PAGER": "cat"}
    proc = subprocess.run(["man", "--warnings", "-l", str(manpage)], capture_output=True,
                          text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    # Bold and underline come as overstrikes when man-db keeps formatting; keep the letters.
    return re.sub(r".\x08", "", proc.stdout)


def test_manpage_lists_every_subcommand_and_its_options(manpage: Path) -> None:
    text = rendered(manpage)
    assert text.startswith("XFS-ADVISOR(1)")
    assert "xfs-advisor - propose" in text
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, child in sub.choices.items():
        assert f"COMMAND 'xfs-advisor {name}'" in text, name
        for p in parsers(child):
            for action in p._actions:
                for flag in action.option_strings:
                    if flag.startswith("--") and flag != "--help":
                        assert flag in text, (name, flag)
    assert "--version" in text


def test_manpage_exit_status_names_every_code(manpage: Path) -> None:
    import advisor.errors

    text = rendered(manpage)
    section = text.split("EXIT STATUS", 1)[1].split("SEE ALSO", 1)[0]
    codes = {v for k, v in vars(advisor.errors).items() if k.startswith("EXIT_")}
    for code in codes | {5}:  # 5 is validate's own (B worse than the defaults)
        assert re.search(rf"^\s+{code}\s+\S", section, re.M), code


def _section(text: str, name: str) -> str:
    """A section of the rendered page, its words on one line (the page wraps them)."""
    found = re.search(rf"^{name}\n(.*?)(?=^[A-Z][A-Z ]+\n|\Z)", text, re.M | re.S)
    assert found, f"no {name} section"
    return " ".join(found.group(1).split())


def test_manpage_has_environment_files_with_install_lines_and_examples(manpage: Path) -> None:
    from advisor.commands.manpage import ENVIRONMENT, EXAMPLES

    text = rendered(manpage)
    environment = _section(text, "ENVIRONMENT")
    for name, _ in ENVIRONMENT:
        assert name in environment, name
    files = _section(text, "FILES")
    # A wheel installs no share/ files: the page says how to install itself and the completions.
    for line in ("xfs-advisor manpage > /usr/local/share/man/man1/xfs-advisor.1",
                 "xfs-advisor completion bash > /etc/bash_completion.d/xfs-advisor",
                 'xfs-advisor completion zsh > "${fpath[1]}/_xfs-advisor"'):
        assert line in files, line
    examples = _section(text, "EXAMPLES")
    for _, command in EXAMPLES:
        assert command in examples, command
    assert "xfs-advisor fleet xfs-advisor-results --kernel 6.19 --by-rule --fail-on breaks" \
        in examples
