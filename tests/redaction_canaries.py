"""One canary per redaction shape (issue 20): the text as a secret would appear (glued to a
word character where the attack was), the part that must never be seen in clear, and the
marker that must be seen instead. Made-up values: none is a live credential."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Canary:
    """A secret or a piece of personal data, written as it would reach a sink."""

    shape: str
    """The name of the shape in redaction_shapes (SECRETS or PII)."""
    text: str
    """What is put into the request, the tool result, the submission or the log."""
    needle: str
    """The part that must never appear in a sink's output."""
    marker: str
    """What appears instead."""


PEM_BODY = "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu"

SECRET_CANARIES: tuple[Canary, ...] = (
    Canary("private_key", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nKTE0canaryPEM\n"
                          "-----END RSA PRIVATE KEY-----", PEM_BODY, "[REDACTED-PRIVATE-KEY]"),
    Canary("jwt", "session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnLWNhbmFyeQ",
           "eyJzdWIiOiJjYW5hcnkifQ", "[REDACTED-TOKEN]"),
    Canary("bearer", "Authorization: Bearer c2VjcmV0LWNhbmFyeS10b2tlbg", "c2VjcmV0LWNhbmFyeS10b2tlbg",
           "[REDACTED-TOKEN]"),
    Canary("basic_auth", "Authorization: Basic YWRhOmNhbmFyeS1wYXNz", "YWRhOmNhbmFyeS1wYXNz",
           "[REDACTED-TOKEN]"),
    Canary("url_password", "DATABASE_URL=postgres://ada:canary-pw-7731@db.internal:5432/app",
           "canary-pw-7731", "[REDACTED-PASSWORD]"),
    Canary("aws_access_key_id", "key_AKIAQ3CANARY7EXAMPLE", "AKIAQ3CANARY7EXAMPLE", "[REDACTED-KEY]"),
    Canary("aws_secret_access_key", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYKEY1",
           "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYKEY1", "[REDACTED-SECRET]"),
    Canary("github_token", "token_ghp_CanaryGitHubToken0123456789abcdefghi",
           "ghp_CanaryGitHubToken0123456789abcdefghi", "[REDACTED-KEY]"),
    Canary("slack_token", "xoxb-1234567890-canarySlackBotToken", "canarySlackBotToken", "[REDACTED-KEY]"),
    Canary("slack_webhook", "https://hooks.slack.com/services/T0CANARY/B0CANARY/canaryWebhookSecret",
           "canaryWebhookSecret", "[REDACTED-KEY]"),
    Canary("stripe_key", "sk_live_CanaryStripeKey0123456789", "CanaryStripeKey0123456789",
           "[REDACTED-KEY]"),
    Canary("google_api_key", "AIzaSyCanaryGoogleKey0123456789abcdefgh",
           "SyCanaryGoogleKey0123456789abcdefgh", "[REDACTED-KEY]"),
    Canary("openai_anthropic_key", "token_sk-ant-api03-canaryAnthropicKey0123456789",
           "canaryAnthropicKey0123456789", "[REDACTED-KEY]"),
    Canary("card_number", "id_4012888888881881", "4012888888881881", "[REDACTED-CC]"),
    Canary("secret_field", '{"db_password": "canary-hunter2-pw"}', "canary-hunter2-pw",
           "[REDACTED-SECRET]"),
)
"""One per secret shape (always redacted)."""

PII_CANARIES: tuple[Canary, ...] = (
    Canary("email", "mail ada.canary@example.org", "ada.canary@example.org", "[REDACTED-EMAIL]"),
    Canary("phone", "call +82 10-5555-0199", "5555-0199", "[REDACTED-PHONE]"),
    Canary("kr_rrn", "rrn 900101-1234567", "900101-1234567", "[REDACTED-ID]"),
    Canary("us_ssn", "ssn 219-09-9999", "219-09-9999", "[REDACTED-ID]"),
    Canary("iban", "iban DE89 3704 0044 0532 0130 00", "3704 0044 0532 0130", "[REDACTED-IBAN]"),
)
"""One per PII category (redacted where a profile names it)."""

ALL = SECRET_CANARIES + PII_CANARIES
