"""Marin's issue conventions: its community form and Markdown template answered over HTTP by the bot (sandbox
GitHub), ``##`` headings and wording variants, and the reports index reading W&B links and conclusions."""

from __future__ import annotations

from pathlib import Path

from bot.forms.issue_forms import bundled_form, load_templates, parse_body
from bot.reports.build import build_reports
from bot.reports.collect import Snapshot
from bot.reports.model import Overlay
from tests.bot.conftest import Lab, app_key, lab, sandbox  # noqa: F401  (fixtures)
from tests.bot.helpers import REPO, bot_comments, repo_files

TEMPLATES = Path(__file__).parent / "fixtures" / "marin" / ".github" / "ISSUE_TEMPLATE"
MARIN_FILES = {f".github/ISSUE_TEMPLATE/{p.name}": p.read_text() for p in TEMPLATES.iterdir()}

COMMUNITY_BODY = (
    "### Your name\n\nAda Lovelace\n\n### Affiliation\n\nAnalytical Engines\n\n### Link to your profile/site\n\n"
    "ada.example.org\n\n### One-sentence description of your experiment\n\nMuon on the 130m speedrun.\n\n"
    "### Hypothesis / Goal\n\nMuon reaches 1.18 BPB with 20% fewer FLOPs.\n\n### Name of your branch\n\nmuon-130m\n"
)
# Written by hand in Marin's style against openlab's experiment form: ## headings, Marin's wording.
MARIN_STYLE_BODY = (
    "## Description\n\nTry a wider MLP.\n\n## Hypothesis or Goal\n\nWider MLPs lower BPB at equal FLOPs.\n\n"
    "### WandB Links\n\n* WandB Report: https://wandb.ai/lab/openlab/reports/Wider--VmlldzoxMjM\n\n"
    "## Planned compute budget (FLOPs)\n\n3e16\n\n## Track\n\nbudget_1e17\n\n## Results\n\n(What did you find?)\n"
)
MARIN_MD_BODY = (
    "## Description\n\nDo z-loss and QK-norm stack?\n\n## Hypothesis or Goal\n\n(What are you trying to learn or "
    "achieve?)\n\n### WandB Links\n\n* WandB Report: https://api.wandb.ai/links/marin-community/abc123\n\n"
    "* https://wandb.ai/marin-community/marin/runs/zloss-qknorm-1b-7f3e\n\n## Results\n\n"
    "**Conclusion:** they stack: 0.02 BPB better than either alone.\n"
)


def test_marin_variants_parse_to_the_forms_fields() -> None:
    form = bundled_form("experiment")
    values, missing = parse_body(form, MARIN_STYLE_BODY)
    assert values["hypothesis"] == values["goal"]
    assert values["hypothesis"].startswith("Wider MLPs lower BPB") and "WandB Links" in values["hypothesis"]
    assert "Results" not in values["hypothesis"]  # a same-level heading ends the section
    assert (values["flops"], values["track"]) == ("3e16", "budget_1e17")
    assert missing == ["Baseline", "Risks", "Related issues"]
    forms, problems = load_templates({p.name: p.read_text() for p in TEMPLATES.iterdir()} | {"config.yml": "x: 1"})
    assert set(forms) == {"community-experiment", "experiment"} and problems == []
    md = forms["experiment"]
    assert md.labels == ("experiments",) and [f.label for f in md.fields] == ["Description", "Hypothesis or Goal", "Results"]
    values, _ = parse_body(md, MARIN_MD_BODY)
    assert values["description"] == "Do z-loss and QK-norm stack?"
    assert "api.wandb.ai/links" in values["hypothesis_or_goal"] and values["results"].startswith("**Conclusion:**")
    untouched = (TEMPLATES / "experiment.md").read_text().split("---\n", 2)[2]
    assert parse_body(md, untouched) == ({"description": None, "hypothesis_or_goal": None, "results": None}, [])
    _, problems = load_templates({"broken.yml": "body: [unclosed"})
    assert problems == [".github/ISSUE_TEMPLATE/broken.yml: not a readable issue template (ParseError)"]


def test_bot_answers_marin_forms_and_headings(lab: Lab) -> None:  # noqa: F811
    d = lab.driver
    d.setup_repo(REPO, {**repo_files(), **MARIN_FILES}, roles={"maintainer": "write"})
    n = d.open_issue(REPO, "ada", "Muon 130m", COMMUNITY_BODY, labels=["community-experiment-submission"])
    m = d.open_issue(REPO, "bob", "[Experiment]: Wider MLP", MARIN_STYLE_BODY, labels=["experiment"])
    k = d.open_issue(REPO, "cy", "Experiment: z-loss x QK-norm", MARIN_MD_BODY, labels=["experiments"])
    bad = d.open_issue(REPO, "eve", "Half a form", "### Your name\n\nEve\n\n### Link to your profile/site\n\n"
                       "javascript:alert(1)\n", labels=["community-experiment-submission"])
    lab.settle()
    t = d.thread(REPO, n)
    assert "preregistered" in t["labels"]
    [c] = bot_comments(t, "preregistration")
    assert "Ada Lovelace" in c["body"] and "muon-130m" in c["body"] and "ada.example.org" in c["body"]
    t = d.thread(REPO, m)
    assert "preregistered" in t["labels"], bot_comments(t)[0]["body"]
    [c] = bot_comments(t, "preregistration")
    assert "section missing" not in c["body"] and f"experiments/exp{m:03d}_wider_mlp.py" in c["body"]
    t = d.thread(REPO, k)
    assert "preregistered" in t["labels"] and len(bot_comments(t, "preregistration")) == 1
    t = d.thread(REPO, bad)
    assert "needs-info" in t["labels"]
    [c] = bot_comments(t, "preregistration")
    for label in ("Affiliation", "One-sentence description of your experiment", "Hypothesis / Goal"):
        assert f"**{label}**: section missing" in c["body"]
    assert "**Link to your profile/site**: must be a web address" in c["body"]


def test_reports_index_takes_wandb_links_and_conclusions_from_issue_bodies() -> None:
    issue = {"state": "open", "html_url": "https://github.com/o/r/issues/", "user": "cy",
             "created_at": "2026-01-02T00:00:00Z"}
    snap = Snapshot(
        repo="o/r", html_url="https://github.com/o/r",
        issues=[
            {**issue, "number": 7, "title": "Experiment: z-loss x QK-norm", "body": MARIN_MD_BODY,
             "labels": ["experiments"]},
            {**issue, "number": 8, "title": "Wider MLP", "body": MARIN_STYLE_BODY, "labels": ["experiment"]},
            {**issue, "number": 9, "title": "Conclusion in a comment", "body": "## Hypothesis or Goal\n\nx\n",
             "labels": ["community-experiment-submission"]},
        ],
        pulls=[],
        comments=[{"issue_number": 9, "user": "dana", "html_url": "",
                   "body": "Ran it.\nConclusion: no gain at 1e18 FLOPs.\n"}],
    )
    rows = {r.number: r for g in build_reports(snap, Overlay(), "openlab[bot]") for r in g.reports}
    z = rows[7]
    assert [(w.title, w.url) for w in z.wandb] == [
        ("W&B report", "https://api.wandb.ai/links/marin-community/abc123"),
        ("zloss-qknorm-1b-7f3e", "https://wandb.ai/marin-community/marin/runs/zloss-qknorm-1b-7f3e"),
    ]
    assert z.conclusion == "they stack: 0.02 BPB better than either alone." and z.status == "done"
    assert [w.url for w in rows[8].wandb] == ["https://wandb.ai/lab/openlab/reports/Wider--VmlldzoxMjM"]
    assert rows[8].conclusion is None and rows[8].status == "needs-info"
    assert rows[9].conclusion == "no gain at 1e18 FLOPs." and rows[9].conclusion_source == "issue"
