"""The GUI tests' leak check (tests/gui/conftest.py) fails a test that leaves a window shown."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.gui


def test_a_window_left_open_fails_its_test_and_one_given_to_qtbot_does_not(pytester):
    pytester.makeconftest(f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from tests.gui.conftest import _no_leaked_windows  # noqa: F401  (the fixture under test)
""")
    pytester.makepyfile(test_windows="""
from PySide6.QtWidgets import QWidget

KEEP = []


def test_leaks_a_window(qtbot):
    w = QWidget()
    w.setWindowTitle("forgotten")
    w.show()
    KEEP.append(w)


def test_hands_its_window_to_qtbot(qtbot):
    w = QWidget()
    qtbot.addWidget(w)
    w.show()
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_leaks_a_window*", "*left 1 window(s) open: QWidget 'forgotten'*"])
