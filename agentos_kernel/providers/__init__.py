"""L2 Provider-agnostic Completion: one call shape for every model backend."""

from .base import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    ProviderFault,
    Usage,
    complete_with_retries,
    redact,
)

__all__ = [
    "CompletionRequest",
    "CompletionResponse",
    "Provider",
    "ProviderFault",
    "Usage",
    "complete_with_retries",
    "redact",
]
