"""Secrets never reach a file: detection (credential values from the environment, detect-secrets
plugins, Anthropic, OpenAI and bearer tokens) and redaction to stable ``[REDACTED:kind]``
placeholders (`redactor`), and the redacted writing of whole files and workspace trees (`files`).
Every writer of a bundle goes through here.

May import: `replay.storage`."""
