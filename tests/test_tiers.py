"""The tier markers (tests/conftest.py) are found from what a test asks for, directly or through
its module's fixtures and helpers."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import _module_marks


def test_marks_follow_helpers_and_fixtures(tmp_path: Path) -> None:
    module = tmp_path / "test_planted.py"
    module.write_text(
        "import pytest\n"
        "from tests.conftest import require_root_tools, require_tmux\n"
        "def _runs_fio():\n    require_root_tools('losetup', 'fio')\n"
        "@pytest.fixture\ndef screen():\n    require_tmux()\n"
        "def test_pure():\n    assert 1\n"
        "def test_through_helper():\n    _runs_fio()\n"
        "def test_loop_fixture(loop):\n    pass\n"
        "def test_screen(screen):\n    pass\n"
        "async def _opens_a_loop():\n    require_root_tools('losetup')\n"
        "async def test_pilot():\n    await _opens_a_loop()\n")
    marks = _module_marks(module)
    assert marks["test_pure"] == set()
    assert marks["test_through_helper"] == {"root", "fio"}
    assert marks["test_loop_fixture"] == {"root"}
    assert marks["test_screen"] == {"tmux"}
    assert marks["test_pilot"] == {"root"}  # async tests (Textual's pilot) and helpers too
