"""What a secret is called once found: its kind (`SecretKind`), the placeholder it becomes
(``[REDACTED:<kind>]``, or for a known value ``[REDACTED:<variable>]``), and a `Detection` (a
value, its kind and its placeholder's label). Also what is never taken for a secret: values
shorter than `MIN_SECRET_LENGTH`, and placeholders themselves."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = ["MIN_SECRET_LENGTH", "Detection", "SecretKind", "is_placeholder_like", "placeholder", "worth_redacting"]

# Shorter values are never redacted: too common to be a credential, too likely to occur by chance.
MIN_SECRET_LENGTH: Final = 8
_PLACEHOLDER_PREFIX: Final = "[REDACTED:"


class SecretKind(StrEnum):
    """What was found: names the placeholder (``[REDACTED:<kind>]``) and a scan's report."""

    ANTHROPIC_API_KEY = "anthropic-api-key"
    OPENAI_API_KEY = "openai-api-key"
    AWS_ACCESS_KEY = "aws-access-key"
    GITHUB_TOKEN = "github-token"
    JWT = "jwt"
    PRIVATE_KEY = "private-key"
    SLACK_TOKEN = "slack-token"
    STRIPE_KEY = "stripe-key"
    BEARER_TOKEN = "bearer-token"
    HIGH_ENTROPY_STRING = "high-entropy-string"
    SECRET_KEYWORD = "secret-keyword"
    ENVIRONMENT_CREDENTIAL = "environment-credential"
    AUTH_HEADER = "auth_header"
    COOKIE = "cookie"


def placeholder(label: str) -> str:
    """The text a secret of kind (or variable) ``label`` becomes."""
    return f"{_PLACEHOLDER_PREFIX}{label}]"


@dataclass(frozen=True, order=True)
class Detection:
    """A secret found in a text: its value, its kind, and the label its placeholder carries
    (the kind, or for a known value its variable's name)."""

    value: str
    kind: SecretKind
    label: str

    @property
    def placeholder(self) -> str:
        """``[REDACTED:<label>]``."""
        return placeholder(self.label)


def is_placeholder_like(value: str) -> bool:
    """Whether ``value`` is (or holds) a placeholder: redacted already."""
    return _PLACEHOLDER_PREFIX in value or value.endswith("REDACTED")


def worth_redacting(value: str) -> bool:
    """Whether ``value`` may be a secret: long enough, and not a placeholder."""
    return len(value) >= MIN_SECRET_LENGTH and not is_placeholder_like(value)
