"""Strategies shared by the fuzz modules: JSON values, hostile strings and hostile YAML."""

from __future__ import annotations

import json
import string

from hypothesis import strategies as st

# Strings a parser or a file system chokes on: NUL, controls, a BOM, bidi overrides, quotes,
# YAML and CEL syntax, path tricks, long runs.
NASTY = ("", " ", "\0", "a\0b", "\x1b[31m", "\ufeff", "\u202e", "'", '"', "\\", "\n", "\r\n", "\t",
         "---", "- x", "{", "[", "&a", "*a", "!!python/object/apply:os.system ['id']", "%YAML 1.1",
         "..", "../../etc/passwd", "/etc/passwd", "~", "$HOME", "${x}", "{{x}}", "%s%n",
         "x" * 300, "é" * 200, "😀" * 100, "NaN", "1e999", "-0", "0x10", "true", "null")

nasty_text = st.one_of(st.sampled_from(NASTY), st.text(max_size=60),
                       st.text(alphabet=st.characters(codec="utf-8"), max_size=30))

# Text no UTF-8 file can hold: argv bytes as Python decodes them (surrogateescape: 0xff becomes
# U+DCFF), lone surrogates (a JSON "\ud800" escape), and either mixed into ordinary text.
_argv_bytes = st.binary(min_size=1, max_size=40).map(lambda b: b.decode("utf-8", "surrogateescape"))
_surrogates = st.text(alphabet=st.characters(categories=["Cs"]), min_size=1, max_size=4)
bad_text = st.one_of(
    _argv_bytes, _surrogates,
    st.tuples(nasty_text, _argv_bytes | _surrogates, nasty_text).map("".join),
).filter(lambda s: not _encodes(s))


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


json_scalars = st.one_of(st.none(), st.booleans(),
                         st.integers(min_value=-(2**70), max_value=2**70),
                         st.floats(allow_nan=False, allow_infinity=False), nasty_text)

json_values = st.recursive(
    json_scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=5),
                           st.dictionaries(nasty_text, kids, max_size=5)),
    max_leaves=25)


def _bomb(fanout: int, depth: int) -> tuple[str, str]:
    """(anchors block, the alias of the last level): `fanout ** depth` leaves once expanded."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * fanout)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n", f"*l{depth - 1}"


@st.composite
def yaml_bombs(draw: st.DrawFn) -> tuple[str, str]:
    """(anchor lines, a value using them): alias bombs, recursive aliases, merge keys."""
    kind = draw(st.sampled_from(["bomb", "recursive_list", "recursive_map", "merge"]))
    if kind == "bomb":
        return _bomb(draw(st.integers(2, 12)), draw(st.integers(2, 10)))
    if kind == "recursive_list":
        return "", "&r [1, *r]"
    if kind == "recursive_map":
        return "", "&r {k: *r}"
    return "base: &b {x: 1}\n", "{<<: *b, y: 2}"


@st.composite
def yaml_deep(draw: st.DrawFn, max_depth: int = 20_000) -> str:
    """A value nested up to `max_depth` levels: flow lists or maps, or block maps."""
    n = draw(st.integers(10, max_depth))
    style = draw(st.sampled_from(["[", "{", "block"]))
    if style == "[":
        return "[" * n + "]" * n
    if style == "{":
        return "{a: " * n + "1" + "}" * n
    n = min(n, 400)  # block style grows quadratically in bytes
    return "\n" + "".join("  " * i + "a:\n" for i in range(1, n)) + "  " * n + "1"


YAML_TAGS = (
    "!!python/object/apply:os.system ['touch /tmp/agentos-fuzz-pwned']",
    "!!python/object:builtins.dict {}", "!!python/name:os.system", "!!python/module:os",
    "!!python/object/new:subprocess.Popen [[id]]", "!!binary aGVsbG8=", "!!set {a, b}",
    "2024-01-01", "2001-12-14t21:59:43.10-05:00", "!!timestamp 2001-12-14", ".nan", "-.inf",
    "!!float 1e400", "!custom x", "!!str", "? [a, b]\n  : c", "{1: a}", "{[1]: a}",
)

yaml_values = st.one_of(
    st.sampled_from(YAML_TAGS),
    yaml_deep(),
    json_values.map(lambda v: json.dumps(v)),  # JSON is YAML (flow style)
    nasty_text.map(lambda s: s.replace("\n", " ")),
    st.integers(1, 2_000_000).map(lambda n: "x" * n),
)

huge_lengths = st.sampled_from([10_000, 100_000, 1_000_000, 3_000_000])
printable = st.text(alphabet=string.printable, max_size=200)
