"""The redaction table itself (issue 20): every shape found as written and glued to a word
character, in dict keys as in values at any depth; the prefilter never says "clean" where a
shape matches; what must survive (hashes, uuids, timestamps, ids, seqs) does; PII only where
asked; the docs list exactly the code's shapes."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel import ContractError, Runtime
from agentos_kernel.hooks import builtin
from agentos_kernel.store.redaction import (
    PII_CATEGORIES,
    Redactor,
    _CleanStrings,
    maybe_secret,
    redact,
    redact_with,
)
from agentos_kernel.store.redaction_shapes import PII, SECRETS, SENSITIVE_NAME, Shape

from .fault_kit import add_profile
from .helpers import CANONICAL, finish
from .redaction_canaries import PII_CANARIES, SECRET_CANARIES, Canary

ROOT = Path(__file__).resolve().parent.parent


def test_every_shape_has_a_canary() -> None:
    assert [c.shape for c in SECRET_CANARIES] == [s.name for s in SECRETS]
    assert [c.shape for c in PII_CANARIES] == [s.name for s in PII]


@pytest.mark.parametrize("c", SECRET_CANARIES, ids=lambda c: c.shape)
def test_each_secret_shape_is_redacted_as_written_and_glued(c: Canary) -> None:
    for text in (c.text, f"x_{c.text}", f"{c.text}_x", f"zz{c.text}", f"see: {c.text}."):
        assert maybe_secret(text), text
        out = redact(text)
        assert c.needle not in out and c.marker in out, (text, out)


@pytest.mark.parametrize("c", PII_CANARIES, ids=lambda c: c.shape)
def test_each_pii_category_only_where_named(c: Canary) -> None:
    assert redact(c.text) == c.text  # opt-in: off by default
    out = redact(c.text, pii=(c.shape,))
    assert c.needle not in out and c.marker in out, out
    others = tuple(n for n in PII_CATEGORIES if n != c.shape)
    assert redact(c.text, pii=others) == c.text  # each category is its own


def test_the_issue_attacks_as_written() -> None:
    key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
    # an API key used as a JSON object key, in a tool call's arguments
    args = {"tool_calls": [{"name": "echo", "args": {key: "x", "nested": [{key: {key: 1}}]}}]}
    out = json.dumps(redact(args))
    assert key not in out and "[REDACTED-KEY]" in out
    # glued to word characters
    assert redact("id_4111111111111111") == "id_[REDACTED-CC]"
    assert redact(f"token_{key}") == "token_[REDACTED-KEY]"


def test_a_key_redacted_into_one_already_there_keeps_both_values() -> None:
    a, b = "ghp_" + "a" * 36, "ghp_" + "b" * 36
    assert redact({a: 1, b: 2, "[REDACTED-KEY]": 3, "[REDACTED-KEY]#2": 4}) == {
        "[REDACTED-KEY]#3": 1, "[REDACTED-KEY]#4": 2, "[REDACTED-KEY]": 3, "[REDACTED-KEY]#2": 4}
    assert redact({a: 1, b: 2}) == {"[REDACTED-KEY]": 1, "[REDACTED-KEY]#2": 2}
    assert redact({1: "x", "ok": {a: "v"}}) == {1: "x", "ok": {"[REDACTED-KEY]": "v"}}
    r = Redactor.of(["canary-key"])  # the exact secret in a key, on the slow path too
    assert r({"canary-key": 1, "a": {"canary-key": 2}}) == {
        "[REDACTED-SECRET]": 1, "a": {"[REDACTED-SECRET]": 2}}


@pytest.mark.parametrize("name", ["password", "db_password", "PASSWD", "pwd", "passphrase",
                                  "client_secret", "aws_secret_access_key", "secretKey",
                                  "api_key", "X-Api-Key", "apikey", "private_key", "token",
                                  "access_token", "authorization", "credentials"])
def test_a_secret_named_field_is_replaced_whole_as_a_dict_and_as_json(name: str) -> None:
    assert SENSITIVE_NAME.fullmatch(name)
    assert redact({"args": {name: "hunter2"}}) == {"args": {name: "[REDACTED-SECRET]"}}
    assert redact({name: 123456}) == {name: "[REDACTED-SECRET]"}
    for text in (json.dumps({name: "hunter2"}), json.dumps({"a": {name: "hun\\\"ter2"}}, indent=2)):
        assert "hunter2" not in redact(text) and "ter2" not in redact(text), redact(text)


@pytest.mark.parametrize("name", ["max_tokens", "input_tokens", "tokens", "api_key_env",
                                  "secretary", "expected_hash", "chain", "keyboard"])
def test_field_names_that_are_no_secret_are_kept(name: str) -> None:
    assert redact({name: "value"}) == {name: "value"}
    assert redact(json.dumps({name: "value"})) == json.dumps({name: "value"})


@pytest.mark.parametrize("text", [
    hashlib.sha256(b"a").hexdigest(), hashlib.sha1(b"a").hexdigest(), hashlib.md5(b"a").hexdigest(),
    "chain 1234567890123456789012345678901234567890123456789012345678901234x"[:70],
    "123e4567-e89b-12d3-a456-426614174000", "12345678-1234-1234-1234-123456789012",
    "2026-12-04T12:35:00.123Z", "2026-12-04 12:35:00", "s0001-e000032", "seq 4111",
    "1733312100123", "risk-assessment-framework-2024-v2", "task-abcdefghijklmnopqrstuvwx",
    "basic settings are fine", "Basic usage: run it", "http://127.0.0.1:8080/path@x",
    "the bearer of bad news", "ids 2026 0101 1200 0001", "12345678901234567890123",
    "version 10.123.4567", "AKIA", "a concrete secret plan",
])
def test_what_must_survive_survives(text: str) -> None:
    assert redact(text) == text
    assert redact(text, pii=PII_CATEGORIES) == text


def test_no_hash_is_mistaken_for_a_card() -> None:
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3000)]
    hashes += [uuid.UUID(int=(i * 7919 ** 9) % (1 << 128)).hex for i in range(3000)]
    assert [h for h in hashes if redact(h) != h] == []
    assert any(re.search(r"\d{13}", h) for h in hashes)  # the case is there: digits runs in hex


def test_a_canonical_log_is_left_as_it_is(workspace: Path) -> None:
    rt = Runtime.from_workspace(workspace)
    run = finish(rt, rt.handle_user_request(CANONICAL))
    for line in run.log_path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        assert redact(event) == event  # ids, seqs, chains, timestamps, hashes
        assert redact(event, pii=PII_CATEGORIES) == event


@pytest.mark.parametrize(("text", "shown"), [
    ("card 4111 1111 1111 1111 ok", "card [REDACTED-CC] ok"),
    ("amex 3782 822463 10005", "amex [REDACTED-CC]"),
    ("visa13 4222222222222", "visa13 [REDACTED-CC]"),
    ("pan 4111111111111111110", "pan [REDACTED-CC]"),  # 19 digits
    ("card1234567812345678", "card[REDACTED-CC]"),  # 16 in a row, glued: always (the spec)
    ("run 41111111111111111", "run 41111111111111111"),  # 17 digits, no Luhn: kept
    ("uatp 100000000000009", "uatp 100000000000009"),  # Luhn, but no card network starts with 1
    ("epoch ms 1733312100121", "epoch ms 1733312100121"),  # Luhn too: a timestamp in ms
    ("in 123456789012345678901234", "in 123456789012345678901234"),  # inside a longer run
    ("hex 0123abcdef4012888888881881abcdef0123456789", "hex 0123abcdef4012888888881881abcdef0123456789"),
    ("short hex ab4012888888881881", "short hex ab[REDACTED-CC]"),
    ("fullwidth ４０１２８８８８８８８８１８８１", "fullwidth [REDACTED-CC]"),
])
def test_card_numbers(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(("category", "text", "shown"), [
    ("phone", "tel 02-312-4567 ok", "tel [REDACTED-PHONE] ok"),
    ("phone", "tel (555) 123-4567", "tel [REDACTED-PHONE]"),
    ("phone", "e164 +14155550123", "e164 [REDACTED-PHONE]"),
    ("phone", "at 2026-12-04 12:35:00.123", "at 2026-12-04 12:35:00.123"),
    ("phone", "seq 000123 id 4567", "seq 000123 id 4567"),
    ("kr_rrn", "bare 9001011234568", "bare [REDACTED-ID]"),  # the old check digit holds
    ("kr_rrn", "bare 9001011234567", "bare 9001011234567"),  # it does not: no dash, kept
    ("kr_rrn", "bad month 901301-1234567", "bad month 901301-1234567"),
    ("us_ssn", "ssn 000-12-3456 or 666-12-3456", "ssn 000-12-3456 or 666-12-3456"),
    ("iban", "iban GB82WEST12345698765432 then", "iban [REDACTED-IBAN] then"),
    ("iban", "iban DE89 3704 0044 0532 0130 00 THEN", "iban [REDACTED-IBAN] THEN"),
    ("iban", "iban DE00 3704 0044 0532 0130 00", "iban DE00 3704 0044 0532 0130 00"),
    ("email", "to first.last+tag@mail.example.co.kr.", "to [REDACTED-EMAIL]."),
])
def test_pii_categories(category: str, text: str, shown: str) -> None:
    assert redact(text, pii=(category,)) == shown


def _strategy(shape: Shape) -> st.SearchStrategy[str]:
    return st.from_regex(shape.pattern, fullmatch=True)


@pytest.mark.parametrize("shape", SECRETS + PII, ids=lambda s: s.name)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_prefilter_says_maybe_wherever_the_shape_matches(shape: Shape, data: st.DataObject) -> None:
    text = data.draw(_strategy(shape))
    clean = _CleanStrings(shapes=SECRETS if shape in SECRETS else (*SECRETS, shape))
    assert clean.may_hold_secret(text), text


def test_a_string_the_table_leaves_alone_is_scanned_once() -> None:
    clean = _CleanStrings()
    text = "a concrete plan for 2026-12-04"  # the prefilter says maybe ("cret"), nothing matches
    assert maybe_secret(text)
    assert redact_with(text, (), (), clean) == text and text in clean.known
    assert redact_with({"t": [text]}, (), (), clean) == {"t": [text]} and clean.scans == 2  # "t"
    assert redact_with(text, (), (), clean) == text and clean.scans == 2


# -- the profile field, the hooks, the docs ------------------------------------------------------


def test_redact_pii_in_a_profile_redacts_the_log(workspace: Path) -> None:
    add_profile(workspace, "pii", redact_pii=["email", "kr_rrn"])
    rt = Runtime.from_workspace(workspace, profile="pii")
    run = finish(rt, rt.handle_user_request("hello, greet Ada at ada.canary@example.org 900101-1234567"))
    text = run.log_path.read_text(encoding="utf-8")
    assert "ada.canary@example.org" not in text and "[REDACTED-EMAIL]" in text
    assert "900101-1234567" not in text and "[REDACTED-ID]" in text
    assert "REDACTED" not in Runtime.from_workspace(workspace).profile.redact_pii.__repr__()


def test_an_unknown_pii_category_is_refused_naming_the_field_and_the_known_ones(
        workspace: Path) -> None:
    add_profile(workspace, "typo", redact_pii=["email", "passport"])
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace)
    text = str(caught.value)
    assert "profiles.typo.redact_pii[1]" in text and "'passport'" in text
    assert all(name in text for name in PII_CATEGORIES)


def test_the_hooks_keep_the_spec_case_and_cover_every_category() -> None:
    assert builtin.redact_pii({"prompt": "pay 1234567812345678"}).output == {"prompt": "pay [REDACTED-CC]"}
    assert builtin.redact_pii({"prompt": "pay id_4111111111111111"}).output == {
        "prompt": "pay id_[REDACTED-CC]"}
    assert builtin.redact_pii({"prompt": "mail ada@example.org"}).decision == "allow"
    for c in PII_CANARIES:
        handler = getattr(builtin, f"redact_pii_{c.shape}")
        out = handler({"prompt": c.text}).output["prompt"]
        assert c.needle not in out and c.marker in out
    everything = " ; ".join(c.text for c in PII_CANARIES) + " ; 4111111111111111"
    out = builtin.redact_pii_all({"prompt": everything}).output["prompt"]
    assert not [c for c in PII_CANARIES if c.needle in out] and "4111111111111111" not in out


def _doc_names(heading: str) -> list[str]:
    doc = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    section = doc.split("## Secrets", 1)[1].split("\n## ", 1)[0]
    after = section.split(heading, 1)[1]
    table = after[after.index("\n|"):].split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.MULTILINE)


def test_the_docs_list_exactly_the_code_shapes() -> None:
    assert _doc_names("Secret shapes (always") == [s.name for s in SECRETS]
    assert _doc_names("PII categories (opt-in") == [s.name for s in PII]


def test_the_mcp_serve_flag_offers_the_modes_it_knows() -> None:
    from agentos_kernel.cli.main import build_parser
    from agentos_kernel.tools.mcp_serve import OUTBOUND

    parser = build_parser()
    args = parser.parse_args(["mcp", "serve"])
    assert args.redact == "secrets"
    for mode in OUTBOUND:
        assert parser.parse_args(["mcp", "serve", "--redact", mode]).redact == mode


@pytest.mark.parametrize(("text", "shown"), [
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYDEMOKEY0001",  # 41: longer is no less secret
     "aws_secret_access_key=[REDACTED-SECRET]"),
    ('"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY=="',
     '"SecretAccessKey": "[REDACTED-SECRET]"'),
    ("secret: not-a-key-at-all", "secret: not-a-key-at-all"),
    ("sha1 " + hashlib.sha1(b"a").hexdigest(), "sha1 " + hashlib.sha1(b"a").hexdigest()),  # no name: kept
])
def test_aws_secret_keys_in_context(text: str, shown: str) -> None:
    assert redact(text) == shown
