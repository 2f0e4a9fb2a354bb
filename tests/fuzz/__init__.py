"""Property-based fuzzing (hypothesis) of every input the runtime reads: SKILL.md frontmatter,
agentos.yaml, workflow Markdown, CEL signals, JSONL log lines, schema payloads, CLI and magic
arguments. One module per input kind. Each property asserts: no exception but the documented
one, a message naming the file/field/line, bounded time (the profile's deadline) and, for the
bomb cases, bounded memory; for runtime inputs, nothing already logged is lost.

Profiles (registered here, applied per test through `fuzz(n)` so no other test's hypothesis
settings change):

- `agentos-fuzz-ci` (default): derandomized (the same inputs on every run), no example
  database (nothing is written to `.hypothesis/`), `n` examples per property; the package
  runs in about a minute on 2 cores.
- `agentos-fuzz-long` (`AGENTOS_FUZZ=long pytest tests/fuzz`): random, 20 x the examples,
  for a run by hand.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, Phase, settings

LONG = os.environ.get("AGENTOS_FUZZ") == "long"
SCALE = 20 if LONG else 1
DEADLINE = timedelta(seconds=20)
"""Per example: generous (CI machines are shared); a hang guard, not a speed goal."""

_COMMON = dict(
    database=None,
    deadline=DEADLINE,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture, HealthCheck.large_base_example],
)
settings.register_profile("agentos-fuzz-ci", derandomize=True, **_COMMON)
settings.register_profile("agentos-fuzz-long", derandomize=False, **_COMMON)
PROFILE = settings.get_profile("agentos-fuzz-long" if LONG else "agentos-fuzz-ci")


def fuzz(examples: int, *, known_bug: bool = False) -> settings:
    """Settings for one property: `examples` inputs in CI, SCALE times more by hand.
    `known_bug` (a strict xfail): stop at the first failing input, without shrinking it."""
    if known_bug:
        return settings(PROFILE, max_examples=examples * SCALE, report_multiple_bugs=False,
                        phases=(Phase.explicit, Phase.reuse, Phase.generate))
    return settings(PROFILE, max_examples=examples * SCALE)


def one_line(message: str) -> str:
    """`message`, asserted to be one non-empty line."""
    assert message and "\n" not in message.rstrip("\n"), f"not one line: {message!r}"
    return message


def error_line(err: str) -> str:
    """The one `agentos: error:` line of stderr, after any `agentos: warning:` lines (a log
    that does not verify is warned about before the error reading it)."""
    *warnings, error = err.splitlines() or [""]
    assert all(w.startswith("agentos: warning: ") for w in warnings), warnings
    assert error.startswith("agentos: error: "), err
    return error
