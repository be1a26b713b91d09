"""MappingError / CloudEventError: message, field, pickling."""

from __future__ import annotations

import pickle

import pytest

from mappings.errors import CloudEventError, MappingError


def test_message_names_the_field() -> None:
    error = MappingError("must be a string", field="properties.subject")
    assert str(error) == "properties.subject: must be a string"
    assert error.field == "properties.subject"
    assert error.reason == "must be a string"


def test_message_without_field() -> None:
    error = MappingError("no sections")
    assert str(error) == "no sections"
    assert error.field is None


def test_hierarchy() -> None:
    error = CloudEventError("missing", field="id")
    assert isinstance(error, MappingError)
    assert isinstance(error, ValueError)
    with pytest.raises(MappingError, match=r"^id: missing$"):
        raise error


@pytest.mark.parametrize(
    "error", [MappingError("x", field="f"), CloudEventError("y", field="time")]
)
def test_pickle_keeps_type_and_field(error: MappingError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.field, copy.reason, str(copy)) == (error.field, error.reason, str(error))
