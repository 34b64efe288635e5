"""The JSONL framing's key of one line (cpp/include/cuckoo/dedup/json_key.hpp), through the hook
``cuckoo._core._json_key(line, path)``, against a model built on Python's ``json``.

The model: the line decoded as strict UTF-8, then ``json.loads`` with every number kept as its text
(``parse_int`` / ``parse_float``: never a float, no digit limit), NaN and Infinity rejected
(``parse_constant``) and the last of repeated names kept (``object_pairs_hook=dict``). Its key is
``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` of the value, encoded
with surrogatepass, with each number in the canonical decimal form, computed here with Python
integers. The documented differences from ``json.loads(bytes)``: NaN/Infinity are invalid; no
limit on integer digits or depth (Python's RecursionError is no verdict); bytes are strict UTF-8
(``json.loads(bytes)`` would also take encoded surrogates and guess UTF-16/32 from zero bytes).
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any, List, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuckoo import _core

json_key = _core._json_key


class Num:
    """A JSON number as written (the model never converts it to a float)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


NUMBER = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]+))?\Z")


def canonical_number(text: str) -> str:
    """The key rule's canonical form of a JSON number, with Python's exact integers."""
    m = NUMBER.match(text)
    assert m, text
    sign, whole, frac, exp = m.group(1), m.group(2), m.group(3) or "", m.group(4) or "0"
    mantissa = int(whole + frac)
    if mantissa == 0:
        return "0"
    q = int(exp) - len(frac)  # value = mantissa * 10**q
    digits = str(mantissa)
    stripped = digits.rstrip("0")
    q += len(digits) - len(stripped)
    digits = stripped
    e = q + len(digits) - 1
    if 0 <= q <= 64:
        body = digits + "0" * q
    elif q < 0 and -7 <= e < 21:
        body = digits[: e + 1] + "." + digits[e + 1:] if e >= 0 else "0." + "0" * (-e - 1) + digits
    else:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + "e" + str(e)
    return sign + body


def canonical(value: Any) -> str:
    if isinstance(value, Num):
        return canonical_number(value.text)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical(value[k]) for k in sorted(value)) + "}"


class Invalid(Exception):
    pass


class NoVerdict(Exception):
    """Python's json cannot decide (RecursionError): a documented difference."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def model(line: bytes, path: List[bytes]) -> Optional[bytes]:
    """The model's key of `line` at `path`: bytes, None (missing), or raises Invalid / NoVerdict."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid from None
    if text.strip(" \t\n\r") == "":
        return None
    try:
        value = json.loads(text, parse_int=Num, parse_float=Num, parse_constant=_reject_constant, object_pairs_hook=dict)
    except RecursionError:
        raise NoVerdict from None
    except ValueError:
        raise Invalid from None
    for member in path:
        if not isinstance(value, dict):
            return None
        found = [k for k in value if k.encode("utf-8", "surrogatepass") == member]
        if not found:
            return None
        value = value[found[0]]
    return canonical(value).encode("utf-8", "surrogatepass")


def ours(line: bytes, path: List[bytes]) -> Union[bytes, None, Invalid]:
    try:
        return json_key(line, path)
    except ValueError as exc:
        assert str(exc).startswith("not valid JSON: ") and " at byte " in str(exc), str(exc)
        return Invalid()


def check_against_model(line: bytes, path: List[bytes]) -> Union[bytes, None, Invalid]:
    got = ours(line, path)
    try:
        want = model(line, path)
    except NoVerdict:
        return got
    except Invalid:
        assert isinstance(got, Invalid), (line, path, got)
        return got
    assert not isinstance(got, Invalid), (line, path)
    assert got == want, (line, path)
    return got


# ---- strategies: JSON texts with every spelling ------------------------------------------------

SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@st.composite
def spelled_string(draw: Any, value: str) -> str:
    """`value` as a JSON string literal, each character raw or escaped at random."""
    out = ['"']
    for ch in value:
        cp = ord(ch)
        forced = ch in '"\\' or cp < 0x20 or 0xD800 <= cp <= 0xDFFF  # must be escaped
        how = draw(st.sampled_from(["raw", "short", "u", "U"])) if not forced else draw(st.sampled_from(["short", "u", "U"]))
        if how == "raw" and not forced:
            out.append(ch)
        elif how == "short" and ch in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[ch])
        else:
            if cp >= 0x10000:
                hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
                units = [hi, lo]
            else:
                units = [cp]
            for u in units:
                out.append(("\\u%04x" if how != "U" else "\\u%04X") % u)
    out.append('"')
    return "".join(out)


CHARS = st.one_of(
    st.characters(codec="utf-8"),  # any scalar value
    st.sampled_from(list('"\\/\b\f\n\r\t\x00\x1f\x7f é€😀\u2028\ufeff')),
    st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]),  # lone surrogates (escaped only)
)
TEXTS = st.text(CHARS, max_size=12)
NAMES = st.one_of(st.sampled_from(["a", "b", "c", "é", "a\n", ""]), TEXTS)


@st.composite
def number_text(draw: Any) -> str:
    sign = draw(st.sampled_from(["", "", "-"]))
    whole = draw(st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,25}", fullmatch=True)))
    frac = draw(st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,25}", fullmatch=True)))
    exp = draw(st.one_of(st.just(""), st.from_regex(r"[eE][-+]?[0-9]{1,4}", fullmatch=True),
                         st.from_regex(r"[eE][-+]?[0-9]{19,30}", fullmatch=True)))
    return sign + whole + frac + exp


@st.composite
def ws(draw: Any) -> str:
    return draw(st.text(st.sampled_from(" \t\n\r"), max_size=2))


@st.composite
def json_text(draw: Any, depth: int = 0) -> str:
    kinds = ["string", "number", "literal"] + (["array", "object", "object"] if depth < 4 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        body = draw(spelled_string(draw(TEXTS)))
    elif kind == "number":
        body = draw(number_text())
    elif kind == "literal":
        body = draw(st.sampled_from(["true", "false", "null"]))
    elif kind == "array":
        items = draw(st.lists(json_text(depth + 1), max_size=4))
        body = "[" + draw(ws()) + ",".join(items) + draw(ws()) + "]"
    else:
        count = draw(st.integers(0, 5))
        members = []
        for _ in range(count):
            name = draw(spelled_string(draw(NAMES)))
            members.append(draw(ws()) + name + draw(ws()) + ":" + draw(json_text(depth + 1)))
        body = "{" + draw(ws()) + ",".join(members) + draw(ws()) + "}"
    return draw(ws()) + body + draw(ws())


PATHS = st.lists(st.sampled_from(["a", "b", "c", "é", "a\n", "", "\ud800"]), max_size=3).map(
    lambda p: [m.encode("utf-8", "surrogatepass") for m in p])

MUTATION_BYTES = st.sampled_from(list(b'"\\,:{}[]0.eE-+ \t\x00\x1f\x7f\x80\xbf\xc3\xed\xf0\xffaNtu') + [0xA9])


@st.composite
def mutated(draw: Any, text: str) -> bytes:
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        if op == "insert" or not data or at == len(data):
            data.insert(at, draw(MUTATION_BYTES))
        elif op == "replace":
            data[at] = draw(MUTATION_BYTES)
        else:
            del data[at]
    return bytes(data)


# ---- properties --------------------------------------------------------------------------------

# 60% of the profile's examples a level (three levels; 60 at the default profile): the file's
# default run stays under ~20 s of CPU, and cuckoo-thorough still scales it.
LEVEL_EXAMPLES = max(10, settings().max_examples * 6 // 10)


@pytest.mark.every_cpu_level
@settings(max_examples=LEVEL_EXAMPLES)
@given(json_text(), PATHS)
def test_valid_lines_match_the_model(text: str, path: List[bytes]) -> None:
    line = text.encode("utf-8")
    got = check_against_model(line, path)
    assert not isinstance(got, Invalid)
    # the key of the whole value is itself JSON whose key is itself (canonical is a fixpoint),
    # unless it holds a lone surrogate (its surrogatepass bytes are not UTF-8, so not a line)
    whole = ours(line, [])
    assert isinstance(whole, bytes)
    if re.search(rb"\xed[\xa0-\xbf]", whole) is None:
        assert ours(whole, []) == whole
    else:
        assert isinstance(ours(whole, []), Invalid)


@pytest.mark.every_cpu_level
@settings(max_examples=LEVEL_EXAMPLES)
@given(st.data(), json_text(), PATHS)
def test_mutated_lines_match_the_model(data: Any, text: str, path: List[bytes]) -> None:
    line = data.draw(mutated(text))
    check_against_model(line, path)


@settings(max_examples=settings().max_examples * 3 // 2)
@given(number_text(), number_text())
def test_numbers_are_one_key_exactly_when_equal(a: str, b: str) -> None:
    # Fraction reads the decimal text exactly; exponents of 19+ digits are too big for it, compare
    # the model's canonical text there instead (the model is checked against ours above).
    ka, kb = json_key(a.encode(), []), json_key(b.encode(), [])
    assert ka == canonical_number(a).encode() and kb == canonical_number(b).encode()
    if max(len(a), len(b)) < 80 and not re.search(r"[eE][-+]?[0-9]{19}", a + b):
        assert (ka == kb) == (Fraction(a) == Fraction(b)), (a, b)


@settings(max_examples=settings().max_examples * 2)
@given(st.integers(-10**30, 10**30).filter(lambda m: m != 0), st.integers(-40, 40), st.integers(0, 6), st.data())
def test_every_spelling_of_a_number_is_one_key(mantissa: int, exp: int, extra: int, data: Any) -> None:
    # mantissa * 10**exp written with the decimal point moved and zeros padded in various ways
    digits = str(abs(mantissa)) + "0" * extra
    e = exp - extra
    sign = "-" if mantissa < 0 else ""
    cut = data.draw(st.integers(0, len(digits)))
    whole, frac = digits[:cut] or "0", digits[cut:]
    whole = whole.lstrip("0") or "0"
    spelled = sign + whole + ("." + frac if frac else "") + "e" + str(e + len(frac))
    plain = sign + digits + "e" + str(e)
    assert json_key(spelled.encode(), []) == json_key(plain.encode(), []), (spelled, plain)
    assert json_key(spelled.encode(), []) == canonical_number(plain).encode()


# ---- examples of the key rule and of what Python's json refuses -----------------------------------

@pytest.mark.parametrize("a, b", [
    ("1", "1.0"), ("1", "1e0"), ("1", "10e-1"), ("1", "0.1e1"), ("0", "-0"), ("0", "-0.0e-5"),
    ('"\\u00e9"', '"é"'), ('"\\ud83d\\ude00"', '"😀"'), ('{"a":1,"b":2}', '{ "b" : 2 , "a" : 1 }'),
    ('{"a":1,"a":2}', '{"a":2}'),
])
def test_one_key(a: str, b: str) -> None:
    assert json_key(a.encode(), []) == json_key(b.encode(), [])


@pytest.mark.parametrize("a, b", [
    ("9007199254740993", "9007199254740992"), ("1e400", "2e400"), ("1", '"1"'), ("1e-400", "0"),
    ('"\\ud83d"', '"\\ud83d\\u0000"'), ("[1,2]", "[2,1]"), ("null", "false"),
])
def test_two_keys(a: str, b: str) -> None:
    assert json_key(a.encode(), []) != json_key(b.encode(), [])


def test_examples() -> None:
    assert json_key(b'{"k":1e400}', [b"k"]) == b"1e400"
    assert json_key(b'{"k":1.5e-30}', [b"k"]) == b"1.5e-30"
    assert json_key(b'{"k":0.00000010}', [b"k"]) == b"0.0000001"
    assert json_key(b'{"k":{"y":[1.0,"\\u0001"],"x":null}}', [b"k"]) == b'{"x":null,"y":[1,"\\u0001"]}'
    assert json_key(b'{"a":{"b":"\\ud800"}}', [b"a", b"b"]) == '"\ud800"'.encode("utf-8", "surrogatepass")
    assert json_key(b'{"a":1}', [b"b"]) is None
    assert json_key(b"[1]", [b"a"]) is None
    assert json_key(b" \t ", [b"a"]) is None
    assert json_key(b"", [b"a"]) is None


@pytest.mark.parametrize("line, message", [
    (b'{"a":1 "b":2}', "not valid JSON: expected ',' or '}' at byte 7"),
    (b"NaN", "not valid JSON: expected a value at byte 0"),
    (b"[Infinity]", "not valid JSON: expected a value at byte 1"),
    (b"01", "not valid JSON: invalid number: leading zero at byte 1"),
    (b'"\xed\xa0\x80"', "not valid JSON: invalid UTF-8 at byte 1"),
    (b'{"a":"x', "not valid JSON: unterminated string at byte 7"),
])
def test_invalid_lines_raise_with_the_offset(line: bytes, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        json_key(line, [b"a"])


def test_what_python_refuses_is_fine_here() -> None:
    # more digits than int() takes by default: written out exactly
    digits = "7" * 5000
    assert json_key(('{"a":' + digits + "}").encode(), [b"a"]) == digits.encode()
    # nesting Python's json cannot parse (RecursionError)
    depth = 100_000
    line = ("[" * depth + "]" * depth).encode()
    with pytest.raises(RecursionError):
        json.loads(line)
    assert json_key(line, []) == line
    deep = ('{"a":' * depth + "1" + "}" * depth).encode()
    assert json_key(deep, [b"a"] * depth) == b"1"
    assert json_key(deep, [b"a"] * (depth + 1)) is None


def test_hook_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError):
        json_key("not bytes", [])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        json_key(b"{}", "a")  # type: ignore[arg-type]
