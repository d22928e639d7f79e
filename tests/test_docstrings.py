"""Every public name of the tool (backward_twice.__all__) has a docstring with an example, and every
example runs and prints what its docstring says (doctest): `help(backward_twice.draw)` is true."""
import doctest
import inspect
import re
import types
import warnings

import pytest

import backward_twice

CONSTANTS = {"SCREEN_PX"}          # a number: described where it is defined (backward_twice.modules)
PUBLIC = [n for n in backward_twice.__all__
          if n not in CONSTANTS and not isinstance(getattr(backward_twice, n), types.ModuleType)]


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_has_a_running_example(name):
    obj = getattr(backward_twice, name)
    doc = inspect.getdoc(obj) or ""
    assert re.search(r"^\s*>>> ", doc, re.M), f"backward_twice.{name} has no example in its docstring"
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name, globs={}) if t.examples]
    assert tests, name
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tests:
            runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0, f"{name}: {result}"


def test_the_constants_are_documented_where_defined():
    from backward_twice import modules

    assert "SCREEN_PX" in inspect.getsource(modules).split("SCREEN_PX =", 1)[0] + "SCREEN_PX ="
