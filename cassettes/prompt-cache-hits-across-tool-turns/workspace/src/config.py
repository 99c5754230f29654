"""Settings for the server."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 8080


def load_config() -> Config:
    # TODO: validate the port range
    return Config()
