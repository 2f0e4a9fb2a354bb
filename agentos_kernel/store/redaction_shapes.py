"""The shapes redaction finds, in ONE table each: `SECRETS` (always on) and `PII` (opt-in per
profile, `redact_pii: [email, ...]`). docs/reliability.md "Secrets" mirrors both tables and a
test checks that it lists exactly these names.

Each shape is applied in table order to the text a sink receives; `hint` is a regex that every
match contains once lowered: the hints of the shapes in force make the one cheap scan
(`redaction.maybe_secret`) that lets a string known to hold none skip the table.

No `\\b` anchors: a secret glued to a word character (`id_4111111111111111`,
`token_sk-ant-…`) is found. What keeps false positives low instead: a card number is a digit
run of 13-19 (not part of a longer run, nor of a hex run of 32+ characters: a sha256, a chain,
a uuid without dashes) that starts like a card and passes the Luhn check, except 16 digits in
a row, always (the spec's `\\d{16}`); a key is its issuer's prefix and length.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

KEY = "[REDACTED-KEY]"
TOKEN = "[REDACTED-TOKEN]"
SECRET = "[REDACTED-SECRET]"
"""What an exact secret (the profile's API key) and a secret-named field's value become."""


@dataclass(frozen=True)
class Shape:
    """One kind of secret or personal data and what it is replaced with."""

    name: str
    """Its name in the docs' table (and, for PII, in a profile's `redact_pii`)."""
    pattern: re.Pattern[str]
    """What it looks like."""
    replace: str | Callable[[re.Match[str]], str]
    """The replacement (`re.sub` syntax) or a function of the match (a checksum decides)."""
    marker: str
    """The marker a redacted match shows."""
    hint: str
    """A regex that every match, lowered, contains (its part of the prefilter). Each of its
    alternatives starts with a literal character, one that prose seldom has: only then does
    the scan skip, in C, the places where no alternative can start."""

    def sub(self, text: str) -> str:
        return self.pattern.sub(self.replace, text)


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def digit_led(rest: str) -> str:
    """`\\d` + rest as alternatives that each start with a literal ASCII digit (a class first
    would cost the prefilter its fast skip; other digits: `redaction.maybe_secret`)."""
    return "|".join(d + rest for d in "0123456789")


_HEX = frozenset("0123456789abcdefABCDEF")


def _in_hex_run(text: str, start: int, end: int, at_least: int = 32) -> bool:
    """Whether text[start:end] lies inside a run of at least `at_least` hex characters (a
    sha256, a chain, an md5, a uuid without dashes): digits inside a hash are not a card."""
    while start > 0 and text[start - 1] in _HEX:
        start -= 1
    while end < len(text) and text[end] in _HEX:
        end += 1
    return end - start >= at_least


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", m.group(0))
    if _in_hex_run(m.string, m.start(), m.end()):
        return m.group(0)
    if len(digits) == 16 and digits == m.group(0):  # the spec's 16 digits in a row: always
        return "[REDACTED-CC]"
    return "[REDACTED-CC]" if digits[0] in "23456" and luhn_ok(digits) else m.group(0)


def _basic(m: re.Match[str]) -> str:
    """HTTP Basic credentials are base64 of `user:password`: a word after "basic" is one only
    when it decodes so (or an Authorization header names it)."""
    token = m.group(3)
    named = re.search(r"(?i)authorization[\"']?\s*[:=]\s*[\"']?$", m.string[max(0, m.start() - 24):m.start()])
    try:
        plain = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        plain = ""
    return f"{m.group(1)} {TOKEN}" if named or ":" in plain else m.group(0)


def _field_hint() -> str:
    """A quote closing a name that ends like a secret's (escaped 0, 1 or 3 times), then a
    colon: one lookbehind per width, as a lookbehind takes only one."""
    ends = ("sword|asswd|hrase|ecret|token|ation|ntial|tials", "pwd|key")
    behind = "|".join(f"(?<=(?:{e}){q})" for e in ends for q in ('"', r'\\"', r'\\\\\\"'))
    return f'"(?:{behind})\\s*:'


SENSITIVE_NAME = re.compile(
    r"(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|passphrase|secret|secret[_-]?key|"
    r"secret[_-]access[_-]key|api[_-]?key|private[_-]key|token|access[_-]token|refresh[_-]token|"
    r"auth[_-]token|bearer[_-]token|authorization|credentials?)", re.IGNORECASE)
"""A field name whose value is a secret whatever it looks like (`password`, `db_password`,
`client_secret`, `aws_secret_access_key`, `api-key`, `token`, ...): fullmatch, any case."""

SECRETS: tuple[Shape, ...] = (
    Shape("private_key", re.compile(
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----(?:.*?-----END[A-Z0-9 ]*-----|.*)", re.DOTALL),
        "[REDACTED-PRIVATE-KEY]", "[REDACTED-PRIVATE-KEY]", r"-----begin"),
    Shape("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
          TOKEN, TOKEN, r"yj"),
    # Case spelled out letter by letter (not (?i)): the engine then skips, in C, to the
    # places a match can start; likewise every shape below leads with a character class.
    Shape("bearer", re.compile(r"([Bb][Ee][Aa][Rr][Ee][Rr])\s+[A-Za-z0-9._~+/=-]{16,}"),
          rf"\1 {TOKEN}", TOKEN, r"bearer"),
    Shape("basic_auth", re.compile(r"([Bb][Aa][Ss][Ii][Cc])(\s+)([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])"),
          _basic, TOKEN, r"basic"),
    Shape("url_password", re.compile(r"://([^\s:/?#@\"']*):([^\s/?#\"']+)@"),
          r"://\1:[REDACTED-PASSWORD]@", "[REDACTED-PASSWORD]", r"://"),
    Shape("aws_access_key_id", re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
          KEY, KEY, r"3t|kia|sia|bia|cca"),
    # from "secret" on: aws_secret_access_key, AWS_SECRET_ACCESS_KEY, SecretAccessKey, aws_secret
    Shape("aws_secret_access_key", re.compile(
        r"([Ss][Ee][Cc][Rr][Ee][Tt](?:_?[Aa][Cc][Cc][Ee][Ss][Ss])?(?:_?[Kk][Ee][Yy])?)"
        r"([\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+]{40,}={0,2}"), rf"\1\2{SECRET}", SECRET, r"cret"),
    Shape("github_token", re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"),
          KEY, KEY, r"gh[pousr]_|github_pat_"),
    Shape("slack_token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"),
          KEY, KEY, r"xox|xapp-"),
    Shape("slack_webhook", re.compile(
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
        KEY, KEY, r"\.slack\.com"),
    Shape("stripe_key", re.compile(
        r"sk_(?:live|test)_[A-Za-z0-9]{10,}|rk_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,}"),
          KEY, KEY, r"k_(?:live|test)_|whsec_"),
    Shape("google_api_key", re.compile(r"AIza[0-9A-Za-z_-]{35}"), KEY, KEY, r"za"),
    # An issuer's own prefix is enough even glued to a letter; a bare `sk-` takes 32 letters and
    # digits in a row, or a word start (`risk-assessment-framework` is no key).
    Shape("openai_anthropic_key", re.compile(
        r"sk-(?:(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{16,}|[A-Za-z0-9]{32,}"
        r"|(?<![A-Za-z0-9]sk-)[A-Za-z0-9_-]{16,})"), KEY, KEY, r"k-"),
    Shape("card_number", re.compile(  # a first digit with no digit before it, then the rest
        r"\d(?<!\d\d)(?:\d{12,18}|\d{3}([ -])\d{4}\1\d{4}\1\d{1,4}(?:\1\d{1,3})?|\d{3}([ -])\d{6}\2\d{4,5})"
        r"(?!\d)"), _card, "[REDACTED-CC]", digit_led(r"\d{3}[ -]?\d{4}")),
    # In JSON text, and in JSON inside a JSON string (a tool call's arguments in a logged
    # message: the quotes escaped once or twice): the value ends at a quote escaped as its
    # name's quotes are.
    Shape("secret_field", re.compile(
        r"(?i)(\"(?:" + SENSITIVE_NAME.pattern + r")(\\\\\\|\\|)\"\s*:\s*)\2\"(?:[^\"\\]|\\.)*?\2\""),
        rf'\1\2"{SECRET}\2"', SECRET, _field_hint()),
)
"""The secret shapes, always redacted, in the order they are applied."""


def _rrn(m: re.Match[str]) -> str:
    """A Korean resident registration number, YYMMDD-GNNNNNN: written with its dash, any such
    number (those issued since October 2020 have no check digit); 13 bare digits only with the
    check digit of the older ones."""
    digits = m.group(1) + m.group(3)
    if m.group(2):
        return "[REDACTED-ID]"
    total = sum(int(d) * w for d, w in zip(digits[:12], (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5), strict=True))
    return "[REDACTED-ID]" if (11 - total % 11) % 10 == int(digits[12]) else m.group(0)


def _iban(m: re.Match[str]) -> str:
    """An IBAN passes mod 97; the longest prefix of the match that does is the IBAN (the
    match may run into a following word)."""
    text = m.group(0)
    for end in range(len(text), 14, -1):
        compact = text[:end].replace(" ", "")
        if text[end - 1] == " " or not 15 <= len(compact) <= 34:
            continue
        moved = compact[4:] + compact[:4]
        if int("".join(str(int(c, 36)) for c in moved)) % 97 == 1:
            return "[REDACTED-IBAN]" + text[end:]
    return text


PII: tuple[Shape, ...] = (
    Shape("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
          "[REDACTED-EMAIL]", "[REDACTED-EMAIL]", r"@"),
    Shape("phone", re.compile(
        r"(?<![\d+])\+[1-9](?:[ .-]?\d){7,14}(?!\d)"           # international, E.164
        r"|(?<![\d.-])0\d{1,2}[ .-]\d{3,4}[ .-]\d{4}(?![\d.-])"  # national with a trunk 0 (KR, ...)
        r"|(?<![\d.-])(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\d.-])"),  # North American
        "[REDACTED-PHONE]", "[REDACTED-PHONE]", r"\+\d|\(\d|" + digit_led(r"[ .-]\d")),
    Shape("kr_rrn", re.compile(
        r"(?<!\d)(\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(-?)([1-8]\d{6})(?!\d)"),
        _rrn, "[REDACTED-ID]", digit_led(r"\d{5}-?\d{7}")),
    Shape("us_ssn", re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?!\d)"),
          "[REDACTED-ID]", "[REDACTED-ID]", digit_led(r"-\d")),
    Shape("iban", re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?"),
          _iban, "[REDACTED-IBAN]", digit_led(r"\d")),
)
"""Personal data categories, each redacted only where a profile names it in `redact_pii`
(and by the `redact_pii_<name>` hook handlers), after the secrets."""

PII_BY_NAME: dict[str, Shape] = {s.name: s for s in PII}
