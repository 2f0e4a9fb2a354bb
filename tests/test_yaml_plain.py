"""load_yaml reads plain block YAML through libyaml (yamlload._plain_load): what it reads is
what the pure bounded loader reads; anything else (not plain, too deep, bad YAML) still goes
to that loader, so the error and its line are as before. Counts, never times."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentos_kernel import yamlload
from agentos_kernel.yamlload import MAX_YAML_DEPTH, _bounded_loader, _plain_load, load_yaml

_PURE = yamlload._PURE


def _pure(text: str) -> Any:
    loader = _bounded_loader()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _same(text: str) -> bool:
    """True when libyaml read it (and read what the pure loader reads)."""
    fast = _plain_load(text)
    try:
        pure = _pure(text)
    except yaml.YAMLError:
        assert fast is _PURE, text
        return False
    if fast is _PURE:
        return False
    assert fast == pure and type(fast) is type(pure), text
    return True


_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(
    st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
_DOCS = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8), inner, max_size=4),
    max_leaves=25)


@settings(max_examples=1500, deadline=None)
@given(doc=_DOCS, style=st.sampled_from([False, None, True]))
def test_documents_read_the_same(doc: Any, style: bool | None) -> None:
    _same(yaml.safe_dump(doc, default_flow_style=style))


@settings(max_examples=3000, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab1.:-# '\"\n,=+^~()$;{}[]`")), max_size=40))
def test_any_plain_text_reads_the_same_or_goes_the_pure_way(text: str) -> None:
    _same(text)


@pytest.mark.parametrize("text", ["!", ">#", "1\t", "a: !x", "a: &x 1\nb: *x", "a: |\n  x",
                                  "\u00e9: 1", "a: 1\r\n", "%YAML 1.1\n---\na: 1", "? a\n: b", 'a: "\\x41"'])
def test_what_libyaml_reads_otherwise_goes_the_pure_way(text: str) -> None:
    assert _plain_load(text) is _PURE


@pytest.mark.parametrize("depth", [MAX_YAML_DEPTH - 1, MAX_YAML_DEPTH, MAX_YAML_DEPTH + 1])
def test_the_depth_bound_is_the_pure_loaders(depth: int) -> None:
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(depth - 1)) + f"{'  ' * (depth - 1)}v"
    if depth <= MAX_YAML_DEPTH:  # `depth` nodes deep: the innermost scalar is the last
        assert _same(text)
    else:
        assert _plain_load(text) is _PURE
        with pytest.raises(yaml.YAMLError, match=f"nested deeper than {MAX_YAML_DEPTH} levels"):
            load_yaml(text)


def test_a_workspace_reads_its_frontmatter_through_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.kernel import Runtime

    pure: list[int] = []
    real = yamlload._bounded_loader
    monkeypatch.setattr(yamlload, "_bounded_loader", lambda: pure.append(1) or real())
    Runtime.from_workspace(None)  # the bundled workspace: skills, agents, agentos.yaml
    assert pure == []


def _collections(text: str) -> int | None:
    """The collections libyaml's events start in `text`, or None when it does not parse."""
    try:
        return sum(isinstance(e, yaml.MappingStartEvent | yaml.SequenceStartEvent)
                   for e in yaml.parse(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return None


@settings(max_examples=3000, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab1.:- '\"\n,{}[]#")), max_size=40)
       | _DOCS.map(lambda d: yaml.safe_dump(d, default_flow_style=None)))
def test_the_indicator_count_bounds_the_collections(text: str) -> None:
    # _plain_load skips its walk over the events when this count is under the depth bound:
    # it must never be fewer than the collections the text holds (so never shallower).
    found = _collections(text)
    if found is not None and not yamlload._not_plain(text):
        assert yamlload._collections_at_most(text) >= found, text


@pytest.mark.parametrize("text", ["- - - - a", "[[[a]]]", "{a: {b: [c]}}", "a:\n- b:\n  - c",
                                  "-\n -\n  -", "a: [b: c]"])
def test_compact_nesting_is_counted(text: str) -> None:
    assert yamlload._collections_at_most(text) >= _collections(text) > 1  # type: ignore[operator]


@settings(max_examples=3000, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("a1:- #\n.!&*|>%@\\?\t\r\x7f\u00e9\U0001f600")),
                    max_size=30) | st.text(max_size=30))
def test_the_plain_check_is_the_regexs(text: str) -> None:
    assert yamlload._not_plain(text) == (yamlload._NOT_PLAIN.search(text) is not None), repr(text)


@pytest.mark.parametrize("text", ["a: 1  # b: [c]\n#: {d: e}\n  # - f", "[a,\n  # b: [c]\n  d]",
                                  "a: 'x\n  # y: [z]'", "a:\n  # - b\n  - c: [d]"])
def test_comment_lines_hold_no_collection(text: str) -> None:
    assert yamlload._collections_at_most(text) >= _collections(text) >= 1  # type: ignore[operator]
    assert _same(text)


def test_the_reference_config_is_read_without_walking_its_events(monkeypatch: pytest.MonkeyPatch) -> None:
    # its comments hold more `:` than the depth bound: counted, they would cost the walk
    from agentos_kernel.workspace import reference_dir

    text = (reference_dir() / "agentos.yaml").read_text()
    walked: list[str] = []
    real = yaml.parse
    monkeypatch.setattr(yaml, "parse", lambda *a, **k: walked.append("parse") or real(*a, **k))
    yamlload.forget_read()
    assert load_yaml(text)["default_profile"] == "scripted"
    assert walked == []


def _outcome(read: Any) -> tuple[Any, ...]:
    try:
        doc = read()
    except Exception as exc:  # the same error, or the same document
        return ("error", type(exc), str(exc))
    return ("doc", repr(doc))  # repr: types, key order, NaN


def _direct_is_pyyamls(text: str) -> None:
    assert _outcome(lambda: yamlload._libyaml_load(text, yaml.CSafeLoader)[0]) == \
        _outcome(lambda: yaml.load(text, Loader=yaml.CSafeLoader)), repr(text)


@settings(max_examples=1500, deadline=None)
@given(doc=_DOCS, style=st.sampled_from([False, None, True]))
def test_the_direct_build_reads_documents_as_pyyaml(doc: Any, style: bool | None) -> None:
    _direct_is_pyyamls(yaml.safe_dump(doc, default_flow_style=style))


_WORDS = ["a", "b", "1", "0x1f", "1:20", "1_0", "-.5", ".nan", ".inf", "yes", "No", "~", "null", "''",
          "2001-12-14", "2001-02-30", "2001-12-14t21:59:43.10-05:00", "<<", "=", "[a, b]", "{a: 1}"]


@settings(max_examples=3000, deadline=None)
@given(text=st.lists(st.sampled_from([*_WORDS, ": ", "- ", "\n", "  ", ", ", "#", "[", "]", "{", "}"]),
                     max_size=14).map("".join)
       | st.text(alphabet=st.sampled_from(list("ab1.:-# '\"\n,=<{}[]")), max_size=40))
def test_the_direct_build_reads_any_text_as_pyyaml(text: str) -> None:
    _direct_is_pyyamls(text)


@pytest.mark.parametrize("text", ["a: 1\nb: {<<: {c: 2}}", "<<: {a: 1}\nb: 2", "=: 1", "a: =",
                                  "[a]: 1", "{a: 1}: 2", "a: 2001-02-30\nb: 2001-13-01", "a: 1\na: 2",
                                  "1: a\ntrue: b", "", "# only a comment", "- 0o17\n- 0b101\n- 1:20"])
def test_the_direct_build_leaves_the_rest_to_pyyaml(text: str) -> None:
    _direct_is_pyyamls(text)


def test_a_workspace_builds_its_yaml_without_pyyamls_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.kernel import Runtime

    generic: list[int] = []
    real = yaml.constructor.BaseConstructor.construct_document
    monkeypatch.setattr(yaml.constructor.BaseConstructor, "construct_document",
                        lambda self, node: generic.append(1) or real(self, node))
    yamlload.forget_read()
    Runtime.from_workspace(None)  # the bundled workspace: skills, agents, agentos.yaml
    assert generic == []


# -- a document proven plain as it is built skips not_json (issue 24, a fresh kernel's load) --

def _old_load_yaml(text: str) -> Any:
    """load_yaml as it was: not_json over every document, whatever read it."""
    from agentos_kernel.schemas.registry import not_json

    doc = _plain_load(text)
    if doc is _PURE:
        doc = _pure(text)
    odd = not_json(doc, max_values=yamlload.MAX_YAML_VALUES, max_depth=MAX_YAML_DEPTH)
    if odd is not None:
        raise yamlload.FrontmatterError(odd.message, odd.path.strip("/").replace("/", ".") or "frontmatter")
    return doc


def _same_as_before(text: str) -> None:
    from agentos_kernel.schemas.registry import not_json

    try:
        doc, plain = yamlload._plain_read(text)
    except Exception:  # an error PyYAML raises too (a date past the month's end): compared below
        doc, plain = None, False
    if plain:  # what is proven plain, not_json finds plain
        assert not_json(doc, max_values=yamlload.MAX_YAML_VALUES, max_depth=MAX_YAML_DEPTH) is None, text
    yamlload.forget_read()
    new = _outcome(lambda: load_yaml(text))
    old = _outcome(lambda: _old_load_yaml(text))
    assert new == old, repr(text)


@settings(max_examples=2000, deadline=None)
@given(text=st.lists(st.sampled_from([*_WORDS, ": ", "- ", "\n", "  ", ", ", "#", "[", "]", "{", "}",
                                      "2001-12-14: a", "1: b", "null: c", "[1, 2]: d"]),
                     max_size=14).map("".join)
       | _DOCS.map(lambda d: yaml.safe_dump(d, default_flow_style=None)))
def test_a_proven_plain_document_is_what_not_json_passes(text: str) -> None:
    _same_as_before(text)


@pytest.mark.parametrize("text", [
    "a: 2001-12-14", "- 2001-12-14t21:59:43.10-05:00", "1: a", "a:\n  true: b", "null: c",
    "a: .nan\nb: .inf", "a: 123456789012345678901234567890",
    "[" + ", ".join(["1"] * yamlload.MAX_YAML_VALUES) + "]",  # the root and 10,000 items: one too many
    "[" + ", ".join(["1"] * (yamlload.MAX_YAML_VALUES - 1)) + "]",  # exactly the bound
    "a: [" + ", ".join(["b"] * (yamlload.MAX_YAML_VALUES - 2)) + "]",  # root, a's list, its items
    "a: [" + ", ".join(["b"] * (yamlload.MAX_YAML_VALUES - 1)) + "]",
])
def test_what_not_json_refuses_is_still_refused(text: str) -> None:
    _same_as_before(text)


def test_the_bound_on_values_is_counted_as_not_json_counts() -> None:
    at = "[" + ", ".join(["1"] * (yamlload.MAX_YAML_VALUES - 1)) + "]"
    assert yamlload._plain_read(at)[1]
    assert not yamlload._plain_read(at[:-1] + ", 1]")[1]
    yamlload.forget_read()
    with pytest.raises(yamlload.FrontmatterError, match="more than 10000 values"):
        load_yaml(at[:-1] + ", 1]", max_chars=10**6)


def test_a_workspace_reads_its_yaml_without_not_json(monkeypatch: pytest.MonkeyPatch) -> None:
    # delete-the-feature: with every document sent through not_json again, this fails
    from agentos_kernel.kernel import Runtime
    from agentos_kernel.schemas import registry

    checked: list[int] = []
    real = registry.not_json
    monkeypatch.setattr(registry, "not_json", lambda *a, **k: checked.append(1) or real(*a, **k))
    yamlload.forget_read()
    Runtime.from_workspace(None)  # the bundled workspace: skills, agents, agentos.yaml
    assert checked == []
