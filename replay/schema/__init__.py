"""What a bundle's documents may say: the strict (pydantic) schema of ``scenario.yaml``'s session
part and of ``session.json`` (`documents`), and the session options they carry: hooks,
permission rules, an interruption, the clock, the tools' environment (`options`).

May import: `engine`."""
