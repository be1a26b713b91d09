#!/usr/bin/env python3
"""Generate ``amqp010/spec.py`` from the AMQP 0-10 spec XML.

Usage::

    python tools/gen_amqp010.py [SPEC_XML] [-o amqp010/spec.py] [--check]

The spec XML defaults to ``specs/amqp-0-10-qpid-errata-stripped.xml`` in the
repository (the published spec, beside its DTD).  ``--check`` exits 1 if the
checked-in module differs from what this generator produces.  The output holds
one class per struct, control and command with straight-line encode/decode code,
one IntEnum per enumerated domain, and the lookup tables the codec uses.
"""

from __future__ import annotations

import argparse
import keyword
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = ROOT / "specs" / "amqp-0-10-qpid-errata-stripped.xml"
DEFAULT_OUT = ROOT / "amqp010" / "spec.py"
NS = "{http://www.amqp.org/schema/amqp.xsd}"

# Wire types a field may have, with (python annotation, decode snippet, encode snippet).
# In snippets, V is the field's local variable; decoders advance ``pos``; "; " separates
# lines and a line starting with "> " is indented one level under the previous one.
FIELD_TYPES: dict[str, tuple[str, str, str]] = {
    "uint8": ("int", "V = buf[pos]; pos += 1", "out.append(V)"),
    "uint16": ("int", "V = _u16(buf, pos)[0]; pos += 2", "out += _p16(V)"),
    "uint32": ("int", "V = _u32(buf, pos)[0]; pos += 4", "out += _p32(V)"),
    "sequence-no": ("int", "V = _u32(buf, pos)[0]; pos += 4", "out += _p32(V)"),
    "uint64": ("int", "V = _u64(buf, pos)[0]; pos += 8", "out += _p64(V)"),
    "datetime": ("int", "V = _i64(buf, pos)[0]; pos += 8", "out += _pi64(V)"),
    "uuid": ("UUID", "hi, lo = _u128(buf, pos); pos += 16; u = _new(_UUID); "
                     "_set(u, 'int', hi << 64 | lo); _set(u, 'is_safe', _UUID_UNKNOWN); V = u",
             "out += V.bytes"),
    "str8": ("str", "e = pos + 1 + buf[pos]; if e > end:; > raise IndexError; "
                    "V = buf[pos + 1:e].decode(); pos = e", "T.enc_str8(out, V)"),
    "str16": ("str", "e = pos + 2 + (buf[pos] << 8 | buf[pos + 1]); if e > end:; "
                     "> raise IndexError; V = buf[pos + 2:e].decode(); pos = e",
              "T.enc_str16(out, V)"),
    "vbin8": ("bytes", "V, pos = T.dec_vbin8(buf, pos)", "T.enc_vbin8(out, V)"),
    "vbin16": ("bytes", "e = pos + 2 + (buf[pos] << 8 | buf[pos + 1]); if e > end:; "
                        "> raise IndexError; V = buf[pos + 2:e]; pos = e", "T.enc_vbin16(out, V)"),
    "vbin32": ("bytes", "V, pos = T.dec_vbin32(buf, pos)", "T.enc_vbin32(out, V)"),
    "map": ("dict[str, Any]", "V, pos = _DEC_MAP(buf, pos, depth)", "T.encode_map(out, V, depth)"),
    "array": ("T.Array", "V, pos = _DEC_ARRAY(buf, pos, depth)", "T.encode_array(out, V, depth)"),
    "struct32": ("Struct", "V, pos = _DEC_STRUCT32(buf, pos, depth)",
                 "T.encode_struct32(out, V, depth)"),
    "sequence-set": ("T.SequenceSet", "V, pos = T.dec_sequence_set(buf, pos)",
                     "T.enc_sequence_set(out, V)"),
    "byte-ranges": ("T.ByteRanges", "V, pos = T.dec_byte_ranges(buf, pos)",
                    "T.enc_byte_ranges(out, V)"),
}
RENAMES = {"session.header": "SessionHeader"}


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace(".", "-").split("-"))


def snake(name: str) -> str:
    s = name.replace("-", "_")
    return s + "_" if keyword.iskeyword(s) else s


@dataclass
class Field:
    name: str
    attr: str
    domain: str
    wire: str  # primitive type name, "bit", or a struct's qualified name
    required: bool
    default: str | None


@dataclass
class StructDef:
    qname: str
    pyname: str
    code: int | None
    size: int
    pack: int
    fields: list[Field]
    kind: str = "struct"  # struct | control | command
    class_code: int = 0
    op_code: int = 0
    has_payload: bool = False
    result: str | None = None  # qualified struct name


@dataclass
class Spec:
    primitives: dict[str, int | None] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)  # qualified -> declared type
    enums: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    structs: dict[str, StructDef] = field(default_factory=dict)
    ops: list[StructDef] = field(default_factory=list)
    classes: dict[str, int] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)


def parse(path: Path) -> Spec:
    root = ET.parse(path).getroot()
    spec = Spec()
    for t in root.findall(NS + "type"):
        code = t.get("code")
        spec.primitives[t.get("name", "")] = int(code, 16) if code else None
    for c in root.findall(NS + "constant"):
        spec.constants[c.get("name", "")] = int(c.get("value", "0"))
    for d in root.findall(NS + "domain"):
        _domain(spec, "", d)
    for cls in root.findall(NS + "class"):
        cname = cls.get("name", "")
        spec.classes[cname] = int(cls.get("code", "0"), 16)
        for d in cls.findall(NS + "domain"):
            _domain(spec, cname, d)
        for s in cls.findall(NS + "struct"):
            _struct(spec, cname, s)
        for kind in ("control", "command"):
            for op in cls.findall(NS + kind):
                for res in op.findall(NS + "result"):
                    for s in res.findall(NS + "struct"):
                        _struct(spec, cname, s)
    # second pass: ops need every struct and domain known
    for cls in root.findall(NS + "class"):
        cname = cls.get("name", "")
        for kind in ("control", "command"):
            for op in cls.findall(NS + kind):
                spec.ops.append(_op(spec, cname, kind, op))
    for struct in spec.structs.values():
        struct.fields = [_resolve(spec, struct.qname.split(".")[0], f) for f in struct.fields]
    return spec


def _domain(spec: Spec, cname: str, d: ET.Element) -> None:
    qname = f"{cname}.{d.get('name')}" if cname else d.get("name", "")
    spec.domains[qname] = d.get("type", "")
    enum = d.find(NS + "enum")
    if enum is not None:
        spec.enums[qname] = [(c.get("name", ""), int(c.get("value", "0"), 0))
                             for c in enum.findall(NS + "choice")]


def _raw_fields(el: ET.Element) -> list[Field]:
    return [Field(f.get("name", ""), snake(f.get("name", "")), f.get("type", ""), "",
                  f.get("required") == "true", f.get("default"))
            for f in el.findall(NS + "field")]


def _struct(spec: Spec, cname: str, s: ET.Element) -> None:
    qname = f"{cname}.{s.get('name')}"
    code = s.get("code")
    spec.structs[qname] = StructDef(
        qname, RENAMES.get(qname, camel(s.get("name", ""))),
        (spec.classes[cname] << 8 | int(code, 16)) if code else None,
        int(s.get("size", "0")), int(s.get("pack", "0")), _raw_fields(s))


def _op(spec: Spec, cname: str, kind: str, op: ET.Element) -> StructDef:
    qname = f"{cname}.{op.get('name')}"
    d = StructDef(qname, camel(qname), None, 0, 2,
                  [_resolve(spec, cname, f) for f in _raw_fields(op)], kind,
                  spec.classes[cname], int(op.get("code", "0"), 16))
    d.has_payload = op.find(NS + "segments") is not None
    res = op.find(NS + "result")
    if res is not None:
        inner = res.find(NS + "struct")
        target = inner.get("name") if inner is not None else res.get("type")
        d.result = _lookup(spec, cname, target or "")
    return d


def _lookup(spec: Spec, cname: str, name: str) -> str:
    """Qualified name of a struct or domain referenced from class ``cname``."""
    for cand in ([name] if "." in name else [f"{cname}.{name}", name]):
        if cand in spec.structs or cand in spec.domains:
            return cand
    if name in spec.primitives:
        return name
    raise SystemExit(f"unresolved type {name!r} in class {cname}")


def _resolve(spec: Spec, cname: str, f: Field) -> Field:
    name = _lookup(spec, cname, f.domain)
    while name in spec.domains:  # follow domain chains to a primitive
        name = _lookup(spec, name.split(".")[0] if "." in name else cname, spec.domains[name])
    if name not in spec.structs and name != "bit" and name not in FIELD_TYPES:
        raise SystemExit(f"field {f.name!r} has unsupported wire type {name!r}")
    f.wire = name
    return f


# --- emitting ------------------------------------------------------------------


def enum_name(spec: Spec, qname: str) -> str:
    base = camel(qname.split(".")[-1])
    clashes = [q for q in spec.enums if camel(q.split(".")[-1]) == base]
    return camel(qname) if len(clashes) > 1 else base


def emit(spec: Spec, source: str) -> str:
    w: list[str] = []
    p = w.append
    p(f'"""AMQP 0-10 protocol definitions, GENERATED from {source} by tools/gen_amqp010.py.')
    p("")
    p("Do not edit: change the generator and run ``python tools/gen_amqp010.py``.")
    p('"""')
    p("")
    p("# ruff: noqa")
    p("# mypy: disable-error-code=\"no-any-return\"")
    p("from __future__ import annotations")
    p("")
    p("import struct")
    p("from enum import IntEnum")
    p("from typing import Any, ClassVar")
    p("from uuid import UUID, SafeUUID")
    p("")
    p("from . import types as T")
    p("from .base import Command, Control, FieldSpec, Struct")
    p("from .errors import DecodeError")
    p("")
    p("_u16 = T.u16_unpack")
    p("_u32 = T.u32_unpack")
    p("_u64 = T.u64_unpack")
    p("_i64 = struct.Struct('>q').unpack_from")
    p("_p16 = T.u16_pack")
    p("_p32 = T.u32_pack")
    p("_p64 = T.u64_pack")
    p("_pi64 = struct.Struct('>q').pack")
    p("_u128 = struct.Struct('>QQ').unpack_from")
    p("_new = object.__new__")
    p("_set = object.__setattr__  # a UUID refuses plain attribute assignment")
    p("_UUID = UUID")
    p("_UUID_UNKNOWN = SafeUUID.unknown")
    p("_DEC_MAP = T.DECODERS[0xA8]")
    p("_DEC_ARRAY = T.DECODERS[0xAA]")
    p("_DEC_STRUCT32 = T.DECODERS[0xAB]")
    p("_SHORT = (IndexError, struct.error)")
    p("")
    for name, value in spec.constants.items():
        p(f"{name.replace('-', '_')} = {value}")
    p("")
    p("CLASS_CODES: dict[str, int] = {")
    for name, code in spec.classes.items():
        p(f"    {name!r}: {code:#04x},")
    p("}")
    p('"""Class code of each spec class."""')
    p("")
    for qname, choices in spec.enums.items():
        p("")
        p(f"class {enum_name(spec, qname)}(IntEnum):")
        p(f'    """Domain {qname}."""')
        p("")
        for cname, value in choices:
            p(f"    {snake(cname).upper()} = {value}")
        p("")
    for s in spec.structs.values():
        p("")
        emit_class(spec, s, w)
    for op in spec.ops:
        p("")
        emit_class(spec, op, w)
    p("")
    for op in spec.ops:
        if op.result:
            p(f"{op.pyname}.RESULT = {spec.structs[op.result].pyname}")
    p("")
    p("STRUCTS_BY_CODE: dict[int, type[Struct]] = {")
    for s in spec.structs.values():
        if s.code is not None:
            p(f"    {s.code:#06x}: {s.pyname},")
    p("}")
    p('"""Coded structs by ``class_code << 8 | struct_code``."""')
    p("T.register_structs(STRUCTS_BY_CODE)  # struct32 values decode through this table")
    p("")
    for kind, table in (("control", "CONTROLS"), ("command", "COMMANDS")):
        base = "Control" if kind == "control" else "Command"
        p(f"{table}: dict[tuple[int, int], type[{base}]] = {{")
        for op in spec.ops:
            if op.kind == kind:
                p(f"    ({op.class_code:#04x}, {op.op_code:#04x}): {op.pyname},")
        p("}")
        p(f'"""{kind.capitalize()}s by ``(class_code, {kind}_code)``."""')
        p("")
    return "\n".join(w) + "\n"


def annotation(spec: Spec, f: Field) -> str:
    if f.wire == "bit":
        return "bool"
    if f.wire in spec.structs:
        return f"{spec.structs[f.wire].pyname} | None"
    return f"{FIELD_TYPES[f.wire][0]} | None"


def emit_class(spec: Spec, s: StructDef, w: list[str]) -> None:
    p = w.append
    base = {"struct": "Struct", "control": "Control", "command": "Command"}[s.kind]
    fields = s.fields
    slots = [f.attr for f in fields] + (["sync"] if s.kind == "command" else [])
    if s.kind == "struct":
        where = f"code {s.code:#06x}" if s.code is not None else "no code"
        doc = f"Struct {s.qname} ({where}, size {s.size}, pack {s.pack})."
    else:
        doc = f"{s.kind.capitalize()} {s.qname} (class {s.class_code:#04x}, code {s.op_code:#04x})."
    p(f"class {s.pyname}({base}):")
    p(f'    """{doc}"""')
    p("")
    p(f"    __slots__ = ({''.join(repr(a) + ', ' for a in slots)})")
    p(f"    NAME: ClassVar[str] = {s.qname!r}")
    if s.kind == "struct":
        p(f"    CODE: ClassVar[int | None] = {s.code if s.code is None else hex(s.code)}")
        p(f"    SIZE_WIDTH: ClassVar[int] = {s.size}")
    else:
        p(f"    CLASS_CODE: ClassVar[int] = {s.class_code:#04x}")
        p(f"    OP_CODE: ClassVar[int] = {s.op_code:#04x}")
    p(f"    PACK_WIDTH: ClassVar[int] = {s.pack}")
    if s.has_payload:
        p("    HAS_PAYLOAD: ClassVar[bool] = True")
    p("    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (")
    for f in fields:
        wire = spec.structs[f.wire].pyname if f.wire in spec.structs else f.wire
        p(f"        FieldSpec({f.name!r}, {f.attr!r}, {wire!r}, {f.domain!r}, {f.required}),")
    p("    )")
    p("")
    # __init__
    params = []
    for f in fields:
        default = "None"
        if f.wire == "bit":
            default = "True" if f.default == "1" else "False"
        params.append(f"{f.attr}: {annotation(spec, f)} = {default}")
    if s.kind == "command":
        params.append("sync: bool = False")
    p(f"    def __init__(self{''.join(', ' + x for x in params)}) -> None:")
    if not slots:
        p("        pass")
    for a in slots:
        p(f"        self.{a} = {a}")
    p("")
    emit_encode(spec, s, w)
    p("")
    emit_decode(spec, s, w)
    if s.kind == "struct" and s.size and s.code is None:
        p("")
        emit_decode_sized(spec, s, w)


def emit_encode(spec: Spec, s: StructDef, w: list[str]) -> None:
    p = w.append
    p("    def encode_fields(self, out: bytearray, depth: int = 0) -> None:")
    if not s.fields:
        if s.pack:
            p(f"        out += bytes({s.pack})")
        else:
            p("        pass")
        return
    for i, f in enumerate(s.fields):
        p(f"        f{i} = self.{f.attr}")
    if s.pack:
        p("        flags = 0")
        for i, f in enumerate(s.fields):
            test = f"f{i}" if f.wire == "bit" else f"f{i} is not None"
            p(f"        if {test}:")
            p(f"            flags |= {1 << i:#x}")
        if s.pack == 1:
            p("        out.append(flags)")
        else:
            p(f"        out += flags.to_bytes({s.pack}, 'little')")
    value_fields = [(i, f) for i, f in enumerate(s.fields) if f.wire != "bit"]
    if not value_fields:
        return
    p("        try:")
    for i, f in value_fields:
        snippet = (f"f{i}.encode_sized(out, depth)" if f.wire in spec.structs
                   else FIELD_TYPES[f.wire][2].replace("V", f"f{i}"))
        if s.pack:
            p(f"            if f{i} is not None:")
            p(f"                {snippet}")
        else:
            p(f"            if f{i} is None:")
            p(f"                raise TypeError('{s.qname}.{f.name} is required')")
            p(f"            {snippet}")
    p("        except Exception as exc:")
    p("            raise self._bad_field(exc) from None")


def emit_decode_sized(spec: Spec, s: StructDef, w: list[str]) -> None:
    """A decode_sized for code-less structs used as field values (reply-to): size, then the
    fields inline (as in decode_fields, bounded by the buffer), then the size check."""
    p = w.append
    size_expr = {1: "buf[pos]", 2: "buf[pos] << 8 | buf[pos + 1]", 4: "_u32(buf, pos)[0]"}[s.size]
    p("    @classmethod")
    p(f"    def decode_sized(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[{s.pyname}, int]:")
    p("        end = len(buf)")
    p(f"        if pos + {s.size} > end:")
    p(f"            raise DecodeError(pos, 'truncated {s.qname} size')")
    p(f"        stop = pos + {s.size} + ({size_expr})")
    p("        if stop > end:")
    p(f"            raise DecodeError(pos, '{s.qname} size overruns its container')")
    p(f"        pos += {s.size}")
    p("        depth += 1")
    emit_decode_body(spec, s, w)
    p("        if pos != stop:")
    p(f"            raise DecodeError(pos, '{s.qname}: size does not match its fields')")
    p("        return self, stop")


def emit_decode(spec: Spec, s: StructDef, w: list[str]) -> None:
    p = w.append
    p("    @classmethod")
    p(f"    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[{s.pyname}, int]:")
    if not s.fields:
        if s.pack:
            p(f"        if pos + {s.pack} > len(buf):")
            p(f"            raise DecodeError(pos, 'truncated {s.qname} packing flags')")
            p(f"        if any(buf[pos:pos + {s.pack}]):")
            p(f"            raise DecodeError(pos, '{s.qname} has no fields but its packing flags are set')")
            p(f"        return cls(), pos + {s.pack}")
        else:
            p("        return cls(), pos")
        return
    p("        end = len(buf)")
    emit_decode_body(spec, s, w)
    p("        return self, pos")


def emit_decode_body(spec: Spec, s: StructDef, w: list[str]) -> None:
    """Decode packing flags and fields at ``buf[pos:]`` (bounded by ``end``) into ``self``,
    a new instance whose slots are assigned directly (cheaper than calling ``cls(...)``)."""
    p = w.append
    p("        self = _new(cls)")
    if s.kind == "command":
        p("        self.sync = False")
    p("        try:")
    if s.pack == 1:
        p("            flags = buf[pos]")
    elif s.pack == 2:
        p("            flags = buf[pos] | buf[pos + 1] << 8")
    elif s.pack:
        p(f"            flags = int.from_bytes(buf[pos:pos + {s.pack}], 'little')")
        p(f"            if pos + {s.pack} > len(buf):")
        p("                raise IndexError")
    if s.pack:
        p(f"            pos += {s.pack}")
        unused = ~((1 << len(s.fields)) - 1) & ((1 << (8 * s.pack)) - 1)
        p(f"            if flags & {unused:#x}:")
        p(f"                raise DecodeError(pos - {s.pack}, "
          f"f'{s.qname}: packing flags {{flags:#x}} name fields it does not have')")
    for i, f in enumerate(s.fields):
        target = f"self.{f.attr}"
        if f.wire == "bit":
            p(f"            {target} = flags & {1 << i:#x} != 0")
            continue
        if f.wire in spec.structs:
            snippet = f"{target}, pos = {spec.structs[f.wire].pyname}.decode_sized(buf, pos, depth)"
        else:
            snippet = FIELD_TYPES[f.wire][1].replace("V", target)
        indent = "            "
        if s.pack:
            p(f"            if flags & {1 << i:#x}:")
            indent += "    "
        for line in snippet.split("; "):
            p(indent + ("    " + line[2:] if line.startswith("> ") else line))
        if s.pack:
            p("            else:")
            p(f"                {target} = None")
    p("        except _SHORT:")
    p(f"            raise DecodeError(pos, 'truncated {s.qname}') from None")
    if any(f.wire in ("str8", "str16") for f in s.fields):
        p("        except UnicodeDecodeError:")
        p(f"            raise DecodeError(pos, 'invalid UTF-8 in {s.qname}') from None")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", type=Path, default=DEFAULT_SPEC)
    ap.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="fail if the output is stale")
    args = ap.parse_args(argv)
    text = emit(parse(args.spec), args.spec.name)
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run python tools/gen_amqp010.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
