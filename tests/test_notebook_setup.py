"""helpers.notebook.setup(): warnings show every time, as `Category: message`, except torch's
Python-3.13.0-only "Guards may run slower" warning, which is about the interpreter's patch level."""
import warnings

from helpers.notebook import setup


def test_setup_hides_only_the_interpreter_patch_level_warning():
    with warnings.catch_warnings(record=True) as seen:
        setup()
        patch_level = "Guards may run slower on Python 3.13.0. Consider upgrading to Python 3.13.1+."
        warnings.warn(patch_level, RuntimeWarning, stacklevel=1)
        warnings.warn("something about autograd", RuntimeWarning, stacklevel=1)
        warnings.warn("something about autograd", RuntimeWarning, stacklevel=1)      # shown again: "always"
    assert [str(w.message) for w in seen] == ["something about autograd"] * 2
