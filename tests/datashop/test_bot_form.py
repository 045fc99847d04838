"""The Datashop form through the bot in the sandbox: prompt checks, LM labels of the examples, starter PR."""

from __future__ import annotations

from runner.pretrained import Pretrained
from tests.bot.conftest import Lab, app_key, lab, sandbox  # noqa: F401 - the bot tests' fixtures
from tests.bot.helpers import REPO, bot_comments

PROMPT = ("Rate how much the following text is about cooking or food, from 0 (not at all) to 5 (entirely).\n\n"
          "Text: {example}\n\nReply with the score only.")


def datashop_body(prompt: str = PROMPT, starter: bool = True) -> str:
    box = "X" if starter else " "
    return (f"### Author name\n\nGrace\n\n### What data\n\nRecipes and cooking advice.\n\n### Prompt\n\n{prompt}\n\n"
            "### An example that should pass\n\nSlice the onions and fry them in olive oil until golden.\n\n"
            "### An example that should not pass\n\nThe socket module provides the BSD socket interface.\n\n"
            f"### Starter branch\n\n- [{box}] Create a starter branch and draft PR for me\n")


def test_datashop_form_labels_examples_and_offers_starter(lab: Lab, smol: Pretrained) -> None:  # noqa: F811
    d = lab.driver
    n = d.open_issue(REPO, "grace", "[Datashop]: Cooking text", datashop_body(), labels=["datashop"])
    lab.settle(timeout=600)
    t = d.thread(REPO, n)
    assert "preregistered" in t["labels"], t
    [c] = bot_comments(t, "preregistration")
    assert "LM label, example that should pass" in c["body"] and " of 5 (confidence " in c["body"]
    branch = f"openlab/datashop-{n}-cooking-text"
    state = d.repo_state(REPO)
    path = f"experiments/exp{n:03d}_cooking_text.py"
    assert branch in state["branches"] and path in state["files"][branch]
    files = state["files"][branch]
    if isinstance(files, dict):  # the starter is valid Python with the prompt as a string literal
        source = files[path]
        compile(source, path, "exec")
        assert repr(PROMPT) in source


def test_datashop_prompt_without_example_needs_info(lab: Lab) -> None:  # noqa: F811
    n = lab.driver.open_issue(REPO, "grace", "[Datashop]: No slot", datashop_body(prompt="Rate this text 0 to 5 please."),
                              labels=["datashop"])
    lab.settle(timeout=120)
    t = lab.driver.thread(REPO, n)
    assert "needs-info" in t["labels"]
    [c] = bot_comments(t, "preregistration")
    assert "must contain `{example}`" in c["body"] and "LM label" not in c["body"]
