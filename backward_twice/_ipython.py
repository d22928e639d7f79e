"""The running IPython shell, if any: the one place the tool asks (plain Python has none)."""
from __future__ import annotations


def shell():
    """The running IPython shell, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
