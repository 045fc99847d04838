"""Nothing PR-supplied is posted raw: a plan error line and a file name carrying HTML, a script, mentions, issue
references, a hidden marker, Markdown links and images and backticks come out as inert text in the plan comment
and check run, and the demo transcript built from that thread runs no injected script in Chromium. Commands hidden
in an HTML comment or a collapsed `<details>` block do not execute."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.commands.parse import find_commands
from bot.github.escape import code, fenced, untrusted
from bot.sandbox.transcript import fetch_thread, write_transcript
from tests.bot import conftest as bot_fixtures
from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_body
from tests.browser import browser_page

sandbox, app_key, lab = bot_fixtures.sandbox, bot_fixtures.app_key, bot_fixtures.lab  # the bot tests' fixtures

EVIL = ("<img src=x onerror=window.__pwned=1> <script>window.__pwned=2</script> @octocat see #1 "
        "<!-- openlab:runs:1 --> [click](https://evil.example/x) ![i](https://evil.example/i.png) <b>bold</b>")
EVIL_NAME = "experiments/x`<img src=y onerror=window.__pwned=3>`@octocat.py"


def _inert(text: str) -> None:
    """What every bot-posted body must satisfy once PR text went into it (code spans are literal text)."""
    text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
    assert "<img" not in text and "<script" not in text and "<b>" not in text
    assert "@octocat" not in text and "#1 " not in text
    assert "](https://evil" not in text.replace("\\]", "")  # no live link or image syntax
    assert not re.search(r"(?<!\\)\]\(https://evil", text)


def test_escape_functions() -> None:
    s = untrusted(EVIL)
    _inert(s)
    assert "<!--" not in s and "\\[click\\]" in s
    assert str(code("a``b")) == "```a``b```" and str(code("`x")) == "`` `x ``"
    assert "<\u200b!--" in code("<!-- openlab:plan:1 -->")
    block = str(fenced("```\nbreak out\n````"))
    assert block.startswith("`````text\n") and block.endswith("\n`````")


def test_commands_count_only_in_visible_text() -> None:
    known = {"run", "status"}
    hidden = ["<!--\n/run\n-->", "<!-- /run -->", "<details><summary>more</summary>\n\n/run\n\n</details>",
              "<DETAILS>\n/run\n</DETAILS>", "text <!-- unterminated\n/run"]
    for body in hidden:
        assert find_commands(body, known) == ([], 0), body
    assert find_commands("<details>\n/run\n</details>\n/status", known)[0][0].name == "status"


@pytest.mark.browser
def test_plan_error_and_file_name_are_posted_inert(lab: Lab, tmp_path: Path) -> None:
    d = lab.driver
    n = d.open_issue(REPO, "alice", "[Experiment]: inject", experiment_body(), labels=["experiment"])
    lab.settle()
    files = {f"experiments/exp{n:03d}_inject.py": f"raise RuntimeError({EVIL!r})\n", EVIL_NAME: "x = 1\n"}
    pr = d.open_pull(REPO, "alice", "inject", files, "Inject", f"Preregistration: #{n}", fork_owner="alice")
    lab.settle(timeout=90)
    # A maintainer's command hidden from view does nothing.
    d.comment(REPO, pr, "maintainer", "<!--\n/run\n-->\n<details>\n\n/run\n\n</details>")
    lab.settle()
    t = d.thread(REPO, pr)
    assert bot_comments(t, "reply") == [] and lab.bot.ledger.runs(REPO, pr) == []

    [plan] = bot_comments(t, "plan")
    body = plan["body"]
    _inert(body)
    assert body.count("<!--") == 1  # only the bot's own marker
    assert "&lt;script&gt;window.__pwned=2&lt;/script&gt;" in body  # shown as text
    assert "@\u200boctocat" in body and "#\u200b1" in body
    # The name with backticks sits in a code span it cannot close (a longer fence around it).
    assert "``experiments/x`<img src=y onerror=window.__pwned=3>`@\u200boctocat.py``" in body
    [check] = t["check_runs"]
    _inert(check["output"]["summary"])

    thread = fetch_thread(str(d.sandbox.base_url).rstrip("/"), REPO, pr, "pull", author="alice")
    page_path = write_transcript([thread], REPO, "openlab[bot]", tmp_path / "transcript.html")
    with browser_page() as (page, _errors):
        dialogs: list[str] = []
        page.on("dialog", lambda dlg: (dialogs.append(dlg.message), dlg.dismiss()))
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate("window.__pwned === undefined") and dialogs == []
        assert page.locator("img").count() == 0 and page.locator("script").count() == 0
        assert page.locator("a[href^='https://evil']").count() == 0
        assert "RuntimeError" in page.inner_text("body")
