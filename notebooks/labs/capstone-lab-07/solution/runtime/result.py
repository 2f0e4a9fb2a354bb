"""Ok / Err(DomainError): domain failures are values, not exceptions."""

from dataclasses import dataclass
from typing import Any


@dataclass
class Ok:
    value: Any


@dataclass
class Err:
    error: "DomainError"


@dataclass
class DomainError:
    kind: str
    code: str
    message: str
    retryable: bool = False
