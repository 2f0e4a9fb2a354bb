"""Is this text valid? One answer for every input the runtime takes in: text is valid when it
is UTF-8, which for a Python str means it holds no lone surrogate.

Python hands undecodable bytes over as lone surrogates: argv and file names are decoded with
surrogateescape (the byte 0xff arrives as U+DCFF), and JSON's `"\\ud800"` escape decodes to a
lone U+D800. Neither can be written to a session log (UTF-8 JSON: orjson refuses it), hashed
or printed on a UTF-8 terminal, so each is refused where it comes in, by a message naming
the input and the fix: argv in `cli.main`, the prompt in `Runtime.start_session`, magic lines
and `%%skill` cells in jupyter/, payloads at every schema boundary (`jsonshape`,
`SchemaRegistry.validate`), tool and hook results (`hooks.bus.plain_json`). Files are decoded
strictly, so a file that is not UTF-8 is a UnicodeDecodeError, worded by `decode_problem`.

No import beyond errors.py: `%load_ext` and the CLI load this module before anything heavy.
"""

from __future__ import annotations

from ..errors import DomainError, ErrorCode

DEFAULT_MAX_PROMPT_BYTES = 512 * 1024
"""A profile's `max_prompt_bytes` when it sets none: a pasted file of a few hundred KB fits
(about 130k tokens of English, most of a 200k-token context window), and the log stays
near 11 x that on the canonical request (every model call copies the prompt; 21 x when the
reviewer fails twice): docs/reliability.md, "Bad input"."""


def first_bad(text: str) -> int | None:
    """The index of the first character of `text` that UTF-8 cannot hold, or None."""
    if text.isascii():  # the common case, checked in C without a copy
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def text_problem(text: str) -> str | None:
    """Why `text` is not valid UTF-8 text (its first bad character and where), or None."""
    at = first_bad(text)
    if at is None:
        return None
    code = ord(text[at])
    if 0xDC80 <= code <= 0xDCFF:  # what surrogateescape makes of a byte that is not UTF-8
        what = f"the byte 0x{code - 0xDC00:02x}, which is not UTF-8 (decoded as U+{code:04X})"
    else:
        what = f"a lone surrogate U+{code:04X} (half of a UTF-16 pair, e.g. a JSON \\u{code:04x})"
    line = text.count("\n", 0, at)
    return f"index {at}{f' (line {line + 1})' if line else ''} is {what}"


def text_error(text: str, what: str, fix: str) -> str | None:
    """One line: `what` is not valid UTF-8 text, where, then `fix`; None when it is valid."""
    problem = text_problem(text)
    return None if problem is None else f"{what} is not valid UTF-8 text: {problem}; {fix}"


def shown(text: str, around: int = 0, limit: int = 60) -> str:
    """`text` quoted for a message, on one line: an undecodable byte as `\\xff`, a lone
    surrogate as `\\ud800`, any other unprintable character escaped; past `limit` characters
    only the part around index `around` is kept."""
    start = max(0, min(around - limit // 2, len(text) - limit))
    out = []
    for c in text[start:start + limit]:
        code = ord(c)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c.isprintable():
            out.append(c)
        else:
            out.append(repr(c)[1:-1])
    return ("'..." if start else "'") + "".join(out) + ("...'" if start + limit < len(text) else "'")


def argv_error(argv: list[str]) -> str | None:
    """The first command-line argument that is not UTF-8 text, named by its position (and
    its option), or None. Every argument is text the runtime may log or print, a path too."""
    for i, arg in enumerate(argv):
        at = first_bad(arg)
        if at is None:
            continue
        name, eq, value = arg.partition("=")
        if arg.startswith("--") and eq and first_bad(name) is None:
            where = f"the value of {shown(name)[1:-1]} {shown(value, at - len(name) - 1)}"
            problem = text_problem(value)
        else:  # the argument before it, when an option: each quoted on one line, as typed
            before = argv[i - 1] if i else ""
            after = (f" (after {shown(before)[1:-1]})" if before.startswith("-")
                     and first_bad(before) is None else "")
            where, problem = f"argument {i + 1} {shown(arg, at)}{after}", text_problem(arg)
        return (f"{where} is not valid UTF-8 text: {problem}; type it as UTF-8 (a path: rename "
                "the file or directory to a UTF-8 name)")
    return None


def decode_problem(exc: UnicodeDecodeError) -> str:
    """A file's UnicodeDecodeError in one line: which byte, where, and the fix."""
    byte = exc.object[exc.start:exc.start + 1]
    return (f"not UTF-8 text: byte 0x{bytes(byte).hex()} at offset {exc.start} ({exc.reason}); "
            "save the file as UTF-8")


def prompt_refusal(prompt: object, max_bytes: int, profile: str, config: str = "agentos.yaml"
                   ) -> DomainError | None:
    """Why `prompt` cannot start a session (empty, not UTF-8 text, over `max_bytes` of UTF-8;
    `config` names the file that sets the limit), or None. Each is refused before any session
    exists, as PROMPT_EMPTY always was: nothing is run, so nothing is recorded or left on disk."""
    if not isinstance(prompt, str) or not prompt or prompt.isspace():  # strip() would copy it
        return DomainError("input", ErrorCode.PROMPT_EMPTY,
                           f"the prompt is empty ({prompt!r}); give the request, e.g. 'hello, greet Ada'")
    bad = text_error(prompt, "the prompt", "give the request as UTF-8 text (check the encoding of "
                                          "the terminal or file it came from)")
    if bad:
        return DomainError("input", ErrorCode.PROMPT_INVALID, bad)
    size = len(prompt) if prompt.isascii() else len(prompt.encode("utf-8"))
    if size > max_bytes:
        return DomainError("input", ErrorCode.PROMPT_TOO_LARGE,
                           f"the prompt is {size:,} bytes; profile {profile!r} takes at most "
                           f"{max_bytes:,} (every model call copies it into the log): shorten it, "
                           f"or raise profiles.{profile}.max_prompt_bytes in {config}")
    return None
