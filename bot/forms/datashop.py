"""The Datashop issue form on the bot's side: check the prompt, label the form's two examples with the embedded
model, and write the starter experiment file.

Labelling runs the LM, so it happens in the handler's ``gather`` (I/O and compute), never in ``decide``; the
result is plain data the pure ``decide`` turns into table rows. The model never sees a secret: it is our own
JAX model reading text. The prompt goes into the starter file as a Python string literal (``repr``), so no
text from the issue can become code.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from bot.github.render import render

log = logging.getLogger("openlab.bot.datashop")

DATASHOP = "datashop"
EXAMPLES = (("positive_example", "should pass"), ("negative_example", "should not pass"))


@dataclass(frozen=True)
class ExampleLabel:
    label: int | None
    confidence: float | None
    error: str | None


@dataclass(frozen=True)
class ExampleLabels:
    labels: dict[str, ExampleLabel]
    error: str | None = None


def prompt_problems(values: dict[str, Any]) -> list[str]:
    from runner.annotation.labels import check_template

    prompt = values.get("prompt")
    return [f"**Prompt**: {p}" for p in check_template(str(prompt))] if prompt else []


def label_examples(values: dict[str, Any]) -> ExampleLabels | None:
    """Run the prompt on the two examples with the embedded model (None when the form is not ready for it)."""
    texts = [values.get(k) for k, _ in EXAMPLES]
    if not values.get("prompt") or prompt_problems(values) or not all(texts):
        return None
    from runner.annotation.labels import render_prompt
    from runner.annotation.local import LocalEngine

    try:
        anns = LocalEngine().annotate([render_prompt(str(values["prompt"]), str(t)) for t in texts])
    except Exception as err:  # the model is missing or broken: say so in the reply, never drop the event
        log.warning("datashop: embedded model failed: %s", err)
        return ExampleLabels({}, error=f"the embedded model could not run ({type(err).__name__})")
    return ExampleLabels({k: ExampleLabel(a.label, a.confidence, a.error)
                          for (k, _), a in zip(EXAMPLES, anns, strict=True)})


def label_rows(result: ExampleLabels | None) -> list[dict[str, str]]:
    if result is None:
        return []
    if result.error:
        return [{"label": "LM labels", "value": result.error}]
    rows = []
    for key, what in EXAMPLES:
        a = result.labels[key]
        value = f"{a.label} of 5 (confidence {a.confidence:.2f})" if a.label is not None else f"none: {a.error}"
        rows.append({"label": f"LM label, example that {what}", "value": value})
    pos, neg = result.labels["positive_example"].label, result.labels["negative_example"].label
    if pos is not None and neg is not None:
        verdict = "yes" if pos > neg else "no: sharpen the prompt (say what earns a high score)"
        rows.append({"label": "Prompt separates the examples", "value": verdict})
    return rows


def starter(values: dict[str, Any], *, title: str, number: int, path: str) -> str:
    return render("starter_datashop.py.j2", title=title, number=number, path=path,
                  prompt_literal=Markup(repr(str(values.get("prompt") or ""))))
