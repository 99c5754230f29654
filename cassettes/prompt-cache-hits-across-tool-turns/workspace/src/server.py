"""The HTTP entry point."""

from config import load_config


def main() -> None:
    config = load_config()
    # TODO: read the port from the environment too
    print(f"listening on {config.host}:{config.port}")
