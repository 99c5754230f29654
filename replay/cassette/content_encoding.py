"""Undoing a recorded body's content-encoding (``gzip``, ``deflate``, ``br``), so that a secret
inside compressed bytes can be found and a cassette stores the body readable. Bounded: a small
compressed body may not expand past `MAX_DECODED_BODY_BYTES`. Brotli needs the optional
``brotli`` (or ``brotlicffi``) package; without it a brotli body is a clear
`ContentEncodingError`."""

from __future__ import annotations

import zlib

try:  # Either package provides the same module API.
    import brotli as _brotli
except ImportError:  # pragma: no cover - depends on the environment
    try:
        import brotlicffi as _brotli  # type: ignore[no-redef]
    except ImportError:
        _brotli = None

__all__ = ["MAX_DECODED_BODY_BYTES", "ContentEncodingError", "decode_content_encoding"]


class ContentEncodingError(ValueError):
    """A compressed body cannot be decoded (corrupt, or its codec is not installed)."""

    def __init__(self, problem: str, remedy: str) -> None:
        super().__init__(f"{problem}; {remedy}")
        self.problem = problem
        self.remedy = remedy


def decode_content_encoding(body: bytes, content_encoding: str) -> bytes:
    """``body`` with its content-encoding (``gzip``, ``deflate``, ``br``, or a list of them)
    undone. A body that is evidently not compressed (vcrpy may already have decoded it) is
    returned as it is. Raises `ContentEncodingError` for corrupt data or an unknown codec."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip"):
            if body[:2] == b"\x1f\x8b":
                body = _bounded(body, zlib.MAX_WBITS | 16, "gzip")
        elif coding == "deflate":
            body = _inflate(body)
        elif coding == "br":
            if _brotli is None:
                raise ContentEncodingError(
                    "its body is brotli-compressed and the 'brotli' package is not installed",
                    "install it (pip install brotli) to read this cassette",
                )
            try:
                body = _brotli.decompress(body)
            except _brotli.error:
                pass  # Not brotli data: vcrpy's decode_compressed_response decoded it already.
        else:
            raise ContentEncodingError(
                f"its body uses the content-encoding {coding!r}, which cannot be decoded",
                "record it again without that encoding",
            )
    return body


def _inflate(body: bytes) -> bytes:
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
        try:
            return _bounded(body, wbits, "deflate")
        except ContentEncodingError as err:
            if "too large" in str(err):
                raise
            continue
    return body


# A compressed body may not expand past this: a small file must not become a memory bomb.
MAX_DECODED_BODY_BYTES = 256 * 1024 * 1024


def _bounded(body: bytes, wbits: int, name: str) -> bytes:
    """Decompress at most ``MAX_DECODED_BODY_BYTES``; a larger body is refused, not inflated."""
    decompressor = zlib.decompressobj(wbits)
    try:
        data = decompressor.decompress(body, MAX_DECODED_BODY_BYTES)
    except zlib.error as err:
        raise ContentEncodingError(f"its {name} body is corrupt ({err})", "re-record it") from None
    if not decompressor.eof and not decompressor.unconsumed_tail:
        raise ContentEncodingError(f"its {name} body is corrupt (the compressed data ends early)", "re-record it")
    if decompressor.unconsumed_tail:
        raise ContentEncodingError(
            f"its {name} body decompresses to more than {MAX_DECODED_BODY_BYTES // (1024 * 1024)} MiB (too large)",
            "refuse it: a recorded answer is never that big",
        )
    return data
