"""How a label is read from the LM, shared by every engine.

We read the label from the **log-probabilities of the allowed answers** at the position where the answer starts:
the assistant turn is pre-filled with Marin's "Final score: " and the next token's distribution over the
allowed scores is the answer (OpenAI-compatible servers take the pre-fill as a final assistant message with
vLLM's ``continue_final_message``). Why: a 135M instruct model rarely keeps a
"Final score: N" format over a free-form answer, so parsing generated text (Marin's way with Llama 3 70B)
wastes most documents; one forward pass per document is also ~10x cheaper than generating, it is
deterministic, and it gives a confidence. If the allowed answers together hold less than ``min_mass`` of the
probability, the LM did not answer with a score: the document is recorded as unparsable and excluded.
Engines that only return text (an endpoint without logprobs) fall back to Marin's parse of "Final score: N".
"""

from __future__ import annotations

import math
import re
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

ANSWER_PREFIX = "Final score: "
_SCORE = re.compile(r"final\s*score\s*[:=]?\s*\**\s*(-?\d+)", re.IGNORECASE)
_BARE = re.compile(r"^\s*\**\s*(-?\d+)\s*\**\s*[.!]?\s*$")


class Annotation(BaseModel):
    """One document's outcome: a label, or why there is none (recorded, counted, excluded)."""

    model_config = ConfigDict(extra="forbid")

    label: int | None
    confidence: float | None = None
    raw: str = Field(default="", description="What the LM said (text or its top answers), for the record.")
    error: str | None = None
    tokens: int = 0


class Engine(Protocol):
    def annotate(self, prompts: list[str]) -> list[Annotation]: ...


def allowed_answers(min_score: int, max_score: int) -> list[str]:
    return [str(s) for s in range(min_score, max_score + 1)]


def parse_score(text: str, min_score: int, max_score: int) -> tuple[int | None, str | None]:
    """Marin's parse: the number after "Final score:", or a bare number; out of range or none is an error."""
    m = _SCORE.search(text) or _BARE.match(text)
    if m is None:
        return None, "no score in the answer"
    score = int(m.group(1))
    if not min_score <= score <= max_score:
        return None, f"score {score} out of range {min_score}..{max_score}"
    return score, None


def from_logprobs(logprobs: dict[str, float], min_score: int, max_score: int, min_mass: float) -> Annotation:
    """The most likely allowed answer, if the allowed answers hold at least ``min_mass`` of the probability."""
    allowed = {a: logprobs[a] for a in allowed_answers(min_score, max_score) if a in logprobs}
    top = sorted(logprobs.items(), key=lambda kv: -kv[1])[:5]
    raw = " ".join(f"{t!r}:{math.exp(lp):.2f}" for t, lp in top)
    mass = sum(math.exp(lp) for lp in allowed.values())
    if mass < min_mass:
        return Annotation(label=None, raw=raw, error=f"allowed answers hold {mass:.2f} < {min_mass} of the probability")
    best = max(allowed, key=lambda a: allowed[a])
    return Annotation(label=int(best), confidence=math.exp(allowed[best]) / mass, raw=raw)


def render_prompt(template: str, example: str) -> str:
    """`{example}` replaced literally (str.format would choke on the braces of code documents)."""
    return template.replace("{example}", example)


def check_template(template: str, max_chars: int = 4000) -> list[str]:
    """Problems with a prompt template, each a sentence a domain expert can act on."""
    problems = []
    if "{example}" not in template:
        problems.append("the prompt must contain `{example}` where the document goes")
    if template.count("{example}") > 1:
        problems.append("the prompt must contain `{example}` once")
    if len(template) > max_chars:
        problems.append(f"the prompt is {len(template)} characters; keep it under {max_chars}")
    if len(template.replace("{example}", "").strip()) < 20:
        problems.append("the prompt needs a sentence or two saying what to score and how")
    return problems
