"""amqp010/spec.py is what tools/gen_amqp010.py generates from the spec XML, and
what it holds matches the XML (read here independently with ElementTree)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import xml.etree.ElementTree as ET
from enum import IntEnum
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from amqp010 import spec
from amqp010 import types as T
from amqp010.base import Command, Control, Struct
from tests.data import ROOT, SPEC_XML

from .captures import XML_NS

GENERATOR = ROOT / "tools" / "gen_amqp010.py"
SPEC_MODULE = ROOT / "amqp010" / "spec.py"


def run_generator(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GENERATOR), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(90)
def test_spec_module_is_up_to_date() -> None:
    result = run_generator("--check")
    assert result.returncode == 0, (
        "amqp010/spec.py is stale: run `python tools/gen_amqp010.py`\n" + result.stderr)


@pytest.mark.timeout(90)
def test_check_detects_a_stale_module(tmp_path: Path) -> None:
    stale = tmp_path / "spec.py"
    stale.write_text(SPEC_MODULE.read_text().replace("MIN_MAX_FRAME_SIZE = 4096",
                                                     "MIN_MAX_FRAME_SIZE = 4097"))
    result = run_generator("--check", "-o", str(stale))
    assert result.returncode == 1 and "stale" in result.stderr
    fresh = tmp_path / "fresh.py"
    assert run_generator("-o", str(fresh)).returncode == 0
    assert fresh.read_text() == SPEC_MODULE.read_text()


# --- the XML, read independently -------------------------------------------------------------


@cache
def xml_root() -> ET.Element:
    return ET.parse(SPEC_XML).getroot()


def xml_classes() -> list[ET.Element]:
    return xml_root().findall(XML_NS + "class")


def by_name() -> dict[str, type[Struct]]:
    out = {}
    for _, cls in inspect.getmembers(spec, inspect.isclass):
        if issubclass(cls, Struct) and cls.__module__ == spec.__name__:
            assert cls.NAME not in out, f"two classes are named {cls.NAME}"
            out[cls.NAME] = cls
    return out


def xml_structs() -> list[tuple[str, ET.Element, ET.Element]]:
    """``(class name, class element, struct element)`` for every struct, results included."""
    out = []
    for c in xml_classes():
        for s in c.iter(XML_NS + "struct"):
            out.append((c.get("name", ""), c, s))
    return out


def xml_ops(kind: str) -> list[tuple[ET.Element, ET.Element]]:
    return [(c, op) for c in xml_classes() for op in c.findall(XML_NS + kind)]


def resolve(class_name: str, type_name: str) -> str:
    """A field's wire type: follow domains to a primitive type or a struct name."""
    primitives = {t.get("name") for t in xml_root().findall(XML_NS + "type")}
    domains = {d.get("name"): d.get("type") for d in xml_root().findall(XML_NS + "domain")}
    for c in xml_classes():
        for d in c.findall(XML_NS + "domain"):
            domains[f"{c.get('name')}.{d.get('name')}"] = d.get("type")
    structs = {f"{cname}.{s.get('name')}" for cname, _, s in xml_structs()}
    scope, name = class_name, type_name
    for _ in range(20):
        qualified = name if "." in name else f"{scope}.{name}"
        if qualified in structs:
            return qualified
        if qualified in domains:
            scope, name = qualified.split(".")[0], domains[qualified]  # type: ignore[assignment]
            continue
        if name in domains:
            name = domains[name]  # type: ignore[assignment]
            continue
        if name in primitives:
            return name
        raise AssertionError(f"cannot resolve {type_name} in {class_name}")
    raise AssertionError(f"domain loop resolving {type_name}")


def check_fields(cls: type[Struct], el: ET.Element, class_name: str) -> None:
    fields = el.findall(XML_NS + "field")
    assert [f.name for f in cls.FIELDS] == [x.get("name") for x in fields], cls.NAME
    for f, x in zip(cls.FIELDS, fields, strict=True):
        assert f.domain == x.get("type"), f"{cls.NAME}.{f.name} domain"
        assert f.required == (x.get("required") == "true"), f"{cls.NAME}.{f.name} required"
        wire = resolve(class_name, x.get("type", ""))
        if wire in {f"{c}.{s.get('name')}" for c, _, s in xml_structs()}:
            assert by_name()[wire].__name__ == f.type, f"{cls.NAME}.{f.name} struct type"
        else:
            assert f.type == wire, f"{cls.NAME}.{f.name}: {f.type} != {wire}"
        if f.type == "bit" and x.get("default") == "1":
            assert getattr(cls(), f.attr) is True, f"{cls.NAME}.{f.name} defaults to set"


# --- sanity checks ----------------------------------------------------------------------------


def test_class_codes() -> None:
    assert {c.get("name"): int(c.get("code", ""), 16) for c in xml_classes()} == spec.CLASS_CODES


def test_every_struct_has_a_class() -> None:
    names = by_name()
    for class_name, cls_el, s in xml_structs():
        qname = f"{class_name}.{s.get('name')}"
        assert qname in names, f"no class for struct {qname}"
        cls = names[qname]
        assert issubclass(cls, Struct) and not issubclass(cls, (Control, Command))
        code = s.get("code")
        expected = int(cls_el.get("code", ""), 16) << 8 | int(code, 16) if code else None
        assert expected == cls.CODE, f"{qname} code"
        assert int(s.get("size", "0")) == cls.SIZE_WIDTH, f"{qname} size"
        assert int(s.get("pack", "0")) == cls.PACK_WIDTH, f"{qname} pack"
        check_fields(cls, s, class_name)
        if expected is not None:
            assert spec.STRUCTS_BY_CODE[expected] is cls
    coded = [s for _, _, s in xml_structs() if s.get("code")]
    assert len(spec.STRUCTS_BY_CODE) == len(coded)


@pytest.mark.parametrize(("kind", "table", "base"), [
    ("control", spec.CONTROLS, Control), ("command", spec.COMMANDS, Command)])
def test_every_control_and_command_has_a_class(kind: str, table: dict[Any, Any],
                                               base: type) -> None:
    names = by_name()
    ops = xml_ops(kind)
    assert len(table) == len(ops)
    for cls_el, op in ops:
        qname = f"{cls_el.get('name')}.{op.get('name')}"
        cls = names[qname]
        assert issubclass(cls, base)
        key = (int(cls_el.get("code", ""), 16), int(op.get("code", ""), 16))
        assert key == (cls.CLASS_CODE, cls.OP_CODE), f"{qname} codes"
        assert table[key] is cls
        assert cls.PACK_WIDTH == 2
        check_fields(cls, op, cls_el.get("name", ""))
        if kind == "command":
            assert (op.find(XML_NS + "segments") is not None) == cls.HAS_PAYLOAD, qname
            result = op.find(XML_NS + "result")
            if result is None:
                assert cls.RESULT is None, qname
            else:
                inner = result.find(XML_NS + "struct")
                target = inner.get("name") if inner is not None else result.get("type", "")
                qualified = target if "." in (target or "") else f"{cls_el.get('name')}.{target}"
                assert cls.RESULT is names[qualified], f"{qname} result"


def test_message_transfer_carries_content() -> None:
    assert spec.MessageTransfer.HAS_PAYLOAD
    assert not spec.MessageAccept.HAS_PAYLOAD
    assert spec.QueueQuery.RESULT is spec.QueueQueryResult
    assert spec.COMMANDS[(0x04, 0x01)] is spec.MessageTransfer


def test_enums_match_the_xml() -> None:
    enums = {cls.__doc__: cls for _, cls in inspect.getmembers(spec, inspect.isclass)
             if issubclass(cls, IntEnum) and cls.__module__ == spec.__name__}
    found = 0
    domains = [("", d) for d in xml_root().findall(XML_NS + "domain")]
    domains += [(c.get("name", ""), d) for c in xml_classes() for d in c.findall(XML_NS + "domain")]
    for class_name, d in domains:
        enum_el = d.find(XML_NS + "enum")
        if enum_el is None:
            continue
        qname = f"{class_name}.{d.get('name')}" if class_name else d.get("name")
        enum = enums.get(f"Domain {qname}.")
        assert enum is not None, f"no IntEnum for domain {qname}"
        want = {c.get("name", "").replace("-", "_").upper(): int(c.get("value", ""), 0)
                for c in enum_el.findall(XML_NS + "choice")}
        assert {m.name: m.value for m in enum} == want, qname
        found += 1
    assert found == len(enums) >= 10


def test_constants() -> None:
    for c in xml_root().findall(XML_NS + "constant"):
        assert getattr(spec, c.get("name", "").replace("-", "_")) == int(c.get("value", ""))


def test_primitive_type_codes_are_all_decodable() -> None:
    codes = {int(t.get("code", ""), 16) for t in xml_root().findall(XML_NS + "type")
             if t.get("code")}
    assert codes == set(T.DECODERS) == set(T.ENCODERS_BY_CODE) == set(T.TYPE_NAMES)
    for t in xml_root().findall(XML_NS + "type"):
        if t.get("code"):
            code = int(t.get("code", ""), 16)
            assert T.TYPE_NAMES[code] == t.get("name")
            if t.get("fixed-width") is not None:
                assert T.FIXED_WIDTHS[code] == int(t.get("fixed-width", ""))
