"""The compactions of two behaviour traces compared: each compaction (a tier's change, a
boundary, a failure) is matched with its counterpart at the same place and size, and what is
left pairs up in order as a compaction that moved, or is told as one that no longer happens or
now happens. Part of the trace diff (`replay.trace.diff`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.trace.behaviour import BehaviourTrace

__all__ = ["compaction_differences"]


@dataclass(frozen=True)
class _Compaction:
    prompt: int
    pass_index: int | None  # None: between prompts, before the prompt's first pass
    entry: dict[str, Any]

    @property
    def key(self) -> tuple[str, str]:
        kind = "failure" if "failed" in self.entry else "boundary" if self.entry.get("boundary") else "change"
        return str(self.entry.get("tier")), kind

    @property
    def name(self) -> str:
        tier, kind = self.key
        return f"{tier} {kind}" if kind != "change" else f"{tier} compaction"

    @property
    def place(self) -> tuple[int, int | None, Any]:
        return self.prompt, self.pass_index, self.tokens

    @property
    def tokens(self) -> Any:
        return self.entry.get("tokens_before")

    def where(self, *, same_prompt_as: _Compaction | None = None) -> str:
        prompt = "" if same_prompt_as is not None and same_prompt_as.prompt == self.prompt else f"prompt {self.prompt} "
        if self.pass_index is None:
            return f"before prompt {self.prompt}"
        return f"before {prompt}pass {self.pass_index}"

    def at(self, *, same_prompt_as: _Compaction | None = None) -> str:
        tokens = f" at {self.tokens:,} tokens" if isinstance(self.tokens, int) else ""
        return self.where(same_prompt_as=same_prompt_as) + tokens


def _compactions(trace: BehaviourTrace) -> list[_Compaction]:
    found = []
    for number, prompt in enumerate(trace.prompts, start=1):
        found.extend(_Compaction(number, None, entry) for entry in prompt.before)
        for index, trace_pass in enumerate(prompt.passes, start=1):
            found.extend(_Compaction(number, index, entry) for entry in trace_pass.compactions)
    return found


def compaction_differences(a: BehaviourTrace, b: BehaviourTrace) -> list[str]:
    """How the compactions of ``b`` differ from those of ``a``, one sentence each: one that
    happens at the same place and size but did something else, one that moved, one that no
    longer happens, a new one. Compactions are told apart by tier and kind (a change, a
    boundary, a failure)."""
    before, after = _compactions(a), _compactions(b)
    lines: list[str] = []
    for key in dict.fromkeys([c.key for c in before] + [c.key for c in after]):
        olds = [c for c in before if c.key == key]
        news = [c for c in after if c.key == key]
        # The same place and size first; then what is left pairs up in order (a moved one).
        for old in list(olds):
            same = next((n for n in news if n.place == old.place), None)
            if same is not None:
                olds.remove(old)
                news.remove(same)
                details = _compaction_details(old.entry, same.entry)
                if details:
                    lines.append(f"{old.name} {old.where()} changed: {'; '.join(details)}.")
        for old, new in zip(olds, news, strict=False):
            lines.append(f"{old.name} moved: {old.at()} → {new.at(same_prompt_as=old)}.")
        for old in olds[len(news) :]:
            lines.append(f"{old.name} no longer happens (was {old.at()}).")
        for new in news[len(olds) :]:
            lines.append(f"{new.name} now happens {new.at()}.")
    return lines


def _compaction_details(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    details = []
    for key in sorted((set(a) | set(b)) - {"tier", "boundary", "requests", "tokens_before"}):
        was, now = a.get(key), b.get(key)
        if was != now:
            label = key.replace("_", " ")
            if isinstance(was, list) or isinstance(now, list):
                details.append(f"{label} {len(was or [])} → {len(now or [])}")
            else:
                details.append(f"{label} {was} → {now}")
    return details
