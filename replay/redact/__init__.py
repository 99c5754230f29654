"""Secrets never reach a file: what a secret is called once found (`kinds`), detection
(`detectors`: credential values from the environment, detect-secrets plugins, Anthropic, OpenAI
and bearer tokens), redaction to stable ``[REDACTED:kind]`` placeholders (`redactor`), and the
redacted writing of whole files and workspace trees (`files`). Every writer of a bundle goes
through here.

May import: `replay.storage`."""
