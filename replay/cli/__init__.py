"""The ``replay`` command line (typer): the app and its global help (`app`), one module per
command group (`run`, `record`, `inspect`, `scrub`), and what they share (`common`, `signals`).

May import: everything of ``replay`` below it; nothing imports it.
"""
