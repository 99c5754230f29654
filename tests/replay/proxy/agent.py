"""A user's agent, as ``replay proxy`` meets it: a separate Python process on the anthropic SDK
that knows nothing of this project but ``ANTHROPIC_BASE_URL``. The classic loop: stream an
answer, run the tool calls, send the results back, stop when the model stops asking.

    python agent.py "the prompt"    # prints each answer's text and each tool call, one per line
"""

from __future__ import annotations

import sys
from typing import Any

import anthropic

TOOLS = [
    {
        "name": "shout",
        "description": "Upper-case a text.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }
]


def main(prompt: str) -> None:
    client = anthropic.Anthropic(max_retries=0)  # the key and the base URL come from the environment
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    while True:
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=256, messages=messages, tools=TOOLS) as s:
            message = s.get_final_message()
        results = []
        for block in message.content:
            if block.type == "text":
                print(f"text: {block.text}")
            elif block.type == "tool_use":
                print(f"tool: {block.name} {block.input}")
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": block.input["text"].upper()})
        print(f"stop: {message.stop_reason} {message.id}")
        if message.stop_reason != "tool_use":
            return
        messages += [{"role": "assistant", "content": [b.model_dump() for b in message.content]}]
        messages += [{"role": "user", "content": results}]


if __name__ == "__main__":
    main(sys.argv[1])
