"""The one HTTP/1.1 server layer of the harness, on ``h11`` (the sans-I/O HTTP/1.1 library
``httpx2``'s transport already brings): the fake model's loopback server and ``replay proxy``
both serve through it.

It owns: reading a request off a connection with the limits enforced (`Request`, `BadRequest`),
writing a response with the framing it chooses — Content-Length, or ``Transfer-Encoding:
chunked`` with each `ResponseWriter.write` flushed as one chunk (one chunk per SSE event), or
the close-delimited body an HTTP/1.0 client gets — and dropping a connection mid-body (closed
without the terminating chunk, so the client sees a real incomplete body) (`connection`); and
a server's life (`HttpServer`): binding, serving in a background thread with its own event loop
or in the current loop, keep-alive, one task per connection, and closing every connection on
stop (`server`).

May import: ``replay.loopback`` only (a foundation package: nothing else of ``replay``).
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BadRequest": "connection",
        "Request": "connection",
        "ResponseWriter": "connection",
        "UnsendableResponse": "connection",
        "HttpServer": "server",
    },
)
