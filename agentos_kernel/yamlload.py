"""YAML reading for every contract file: PyYAML's safe loader, parsed by libyaml.

`yaml.safe_load` scans and parses in pure Python: half of loading a workspace. PyYAML's
`CSafeLoader` does the same safe construction over libyaml's parser, several times faster.
A document libyaml refuses is read again by the pure-Python loader, so the error a user
sees (its message and line) is the one they saw before, with or without libyaml. PyYAML
itself is imported on the first call: `import agentos_kernel` does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the annotation only: yaml is still imported on the first call
    import yaml


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through CSafeLoader where this PyYAML has libyaml."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)  # CSafeLoader: the safe loader, in C
        except yaml.YAMLError:
            pass  # read again below: the pure loader's error names the line the same way
    return yaml.safe_load(text)


def yaml_error() -> type[yaml.YAMLError]:
    """`yaml.YAMLError`, for an `except` clause in a module that does not import yaml."""
    import yaml

    return yaml.YAMLError
