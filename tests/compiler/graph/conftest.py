"""Puts the repository root on sys.path so tests can import the shared `tests.models` helpers."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[3])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
