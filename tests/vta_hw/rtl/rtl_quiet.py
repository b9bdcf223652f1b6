"""Helpers for parameter-error tests: no UnusedElaboratable noise from half-built objects."""
import gc
import warnings

import pytest


def assert_raises(exc, match, fn, *args, **kwargs):
    """``fn(*args)`` raises ``exc`` whose message matches ``match``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with pytest.raises(exc, match=match):
                fn(*args, **kwargs)
        finally:
            gc.collect()
