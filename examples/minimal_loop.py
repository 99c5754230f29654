"""The classic agent loop, as most people first write it: call the model, run the tools it asks
for, send the results back, stop when it answers without asking for a tool.

    python examples/minimal_loop.py "What do the notes in this folder say?"

`anthropic.Anthropic()` reads ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL, to point it at
`replay serve` or `replay proxy`) from the environment; the tools see the current folder.
docs/loops-compared.md runs it beside the engine under the same faults.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anthropic

MODEL = "claude-sonnet-4-6"

TOOLS: list[dict[str, Any]] = [
    {
        "name": "list_files",
        "description": "List the files and folders in a folder of the workspace.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A folder relative to the workspace, or '.'."}},
            "required": ["path"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a text file in the workspace.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A file relative to the workspace."}},
            "required": ["path"],
        },
    },
]


def run_tool(name: str, tool_input: dict[str, Any], workdir: Path) -> str:
    """Run one tool call in ``workdir`` and return its output."""
    path = (workdir / tool_input["path"]).resolve()
    if not path.is_relative_to(workdir.resolve()):
        raise ValueError(f"{tool_input['path']} is outside the workspace.")
    if name == "list_files":
        return "\n".join(sorted(child.name + ("/" if child.is_dir() else "") for child in path.iterdir()))
    if name == "read_file":
        return path.read_text(encoding="utf-8")
    raise ValueError(f"Unknown tool {name}.")


def run(client: anthropic.Anthropic, prompt: str, workdir: Path) -> str:
    """Run the loop for one prompt and return the model's final text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    while True:
        # No retries of our own: the SDK's defaults apply (max_retries=2 for 408, 409, 429, 5xx and
        # connection errors, with backoff or the server's retry-after); anything else raises.
        response = client.messages.create(model=MODEL, max_tokens=1024, tools=TOOLS, messages=messages)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return "".join(block.text for block in response.content if block.type == "text")
        results = []
        for block in response.content:
            if block.type == "tool_use":
                try:
                    output, is_error = run_tool(block.name, block.input, workdir), False
                except (OSError, ValueError, KeyError) as exc:
                    output, is_error = f"Error: {exc}", True
                results.append(
                    {"type": "tool_result", "tool_use_id": block.id, "content": output, "is_error": is_error}
                )
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    print(run(anthropic.Anthropic(), " ".join(sys.argv[1:]) or "What is in this folder?", Path.cwd()))
