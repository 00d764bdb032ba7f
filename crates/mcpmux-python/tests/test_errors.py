"""The exception hierarchy: what each class is, the fields it carries, and that exceptions
survive pickling (for harnesses that pass them between processes)."""

from __future__ import annotations

import pickle

import mcpmux
from mcpmux import errors


def test_the_hierarchy_groups_what_a_harness_acts_on() -> None:
    assert issubclass(errors.CircuitOpen, errors.ServerUnavailable)
    assert issubclass(errors.ConnectionLost, errors.ServerUnavailable)
    assert issubclass(errors.AuthRequired, errors.ServerUnavailable)
    assert issubclass(errors.OutOfScope, errors.PolicyRefused)
    assert issubclass(errors.ToolTimeout, TimeoutError)
    assert issubclass(errors.InvalidArguments, ValueError)
    assert issubclass(errors.UnknownTool, LookupError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.McpmuxError)
        assert getattr(mcpmux, name) is getattr(errors, name)


def test_fields_are_attributes_and_survive_pickling() -> None:
    error = errors.PolicyRefused(
        "call to `x` is denied", kind="denied", tool="x", rule="x", asked=False, for_model="denied"
    )
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is errors.PolicyRefused
    assert (again.tool, again.rule, again.asked, again.for_model) == ("x", "x", False, "denied")
    assert str(again) == "call to `x` is denied"
