"""Retry policy: 408, 429 and 5xx answers are retried with exponential backoff."""

RETRYABLE = {408, 429, 500, 502, 503, 504}


def delay_s(attempt: int, retry_after: float | None = None) -> float:
    if retry_after is not None:
        return retry_after
    return min(0.5 * 2 ** (attempt - 1), 32.0)
