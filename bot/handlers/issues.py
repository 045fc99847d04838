"""`issues` events: parse the issue form, validate it, label the issue and keep one sticky comment."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from markupsafe import Markup

from bot.actions import Action, AddLabels, CreateStarter, RecordPreregistration, RemoveLabel, UpsertComment
from bot.config.repo_config import RepoConfig
from bot.forms.datashop import DATASHOP, ExampleLabels, label_examples, label_rows, prompt_problems, starter
from bot.forms.issue_forms import (
    FORMS,
    TEMPLATE_DIR,
    Form,
    bundled_form,
    load_templates,
    parse_body,
    which_form,
)
from bot.forms.preregistration import check, next_file, slugify
from bot.github.events import IssuesEvent
from bot.github.render import render, render_comment
from bot.handlers.env import Env, load_repo_config
from bot.ledger import LedgerView

STARTER_OPTION = "starter"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IssueFacts:
    config: RepoConfig
    config_error: str | None
    forms: dict[str, Form]
    datashop: ExampleLabels | None = None  # the Datashop form's two examples labelled by the embedded LM


def gather(event: IssuesEvent, env: Env) -> IssueFacts:
    """Every issue template the repository has (``.github/ISSUE_TEMPLATE/``); ours where it has none."""
    repo = event.repository.full_name
    config, error = load_repo_config(env, repo)
    files: dict[str, str] = {}
    for entry in env.gh.list_dir(repo, TEMPLATE_DIR):
        name = str(entry.get("name") or "")
        if entry.get("type") == "file" and name.rsplit(".", 1)[-1] in ("yml", "yaml", "md"):
            text = env.gh.get_contents(repo, f"{TEMPLATE_DIR}/{name}")
            if text is not None:
                files[name] = text
    forms, problems = load_templates(files)
    for problem in problems:  # one broken template must not silence the others
        log.warning("%s: %s", repo, problem)
    for name in FORMS:  # ours answer where the lab has no (readable) form of that name
        forms.setdefault(name, bundled_form(name))
    return IssueFacts(config=config, config_error=error, forms=forms, datashop=_datashop_labels(event, forms))


def _datashop_labels(event: IssuesEvent, forms: dict[str, Form]) -> ExampleLabels | None:
    if event.action not in ("opened", "edited", "reopened") or event.issue.pull_request is not None:
        return None
    form = which_form(event.issue.label_names, event.issue.title, forms)
    if form is None or form.name != DATASHOP or (event.sender.is_bot and event.action == "edited"):
        return None
    return label_examples(parse_body(form, event.issue.body)[0])


def decide(event: IssuesEvent, facts: IssueFacts, view: LedgerView) -> list[Action]:
    if event.action not in ("opened", "edited", "reopened") or event.issue.pull_request is not None:
        return []
    if event.sender.is_bot and event.action == "edited":
        return []
    issue, repo, cfg = event.issue, event.repository.full_name, facts.config
    form = which_form(issue.label_names, issue.title, facts.forms)
    if form is None:
        return []
    values, missing = parse_body(form, issue.body)
    checked = check(form, values, missing, cfg)
    if form.name == DATASHOP:
        checked.problems.extend(prompt_problems(values))
    if facts.config_error:
        checked.problems.append(f"repository config: {facts.config_error} (defaults used)")
    slug = slugify(issue.title, form)
    path = next_file(form.name, issue.number, slug, cfg)
    status = "preregistered" if checked.ok else "needs-info"
    add, remove = (cfg.preregistered_label, cfg.needs_info_label) if checked.ok else (
        cfg.needs_info_label, cfg.preregistered_label)
    wants_starter = bool(values.get(STARTER_OPTION)) and checked.ok and form.name in ("speedrun", DATASHOP)
    branch = f"openlab/{form.name}-{issue.number}-{slug}".replace("_", "-")
    rows = [{"label": f.label, "value": _cell(values.get(f.id))} for f in form.fields if f.id != STARTER_OPTION]
    if form.name == DATASHOP:
        rows += label_rows(facts.datashop)
    body = render_comment(
        "preregistration", str(issue.number), ok=checked.ok, form=form.name, label=add,
        problems=[Markup(p) for p in checked.problems], rows=rows, next_file=path, number=issue.number,
        starter=branch if wants_starter else None,
    )
    actions: list[Action] = [
        RecordPreregistration(repo=repo, issue_number=issue.number, form=form.name, status=status,
                              title=issue.title, slug=slug, track=checked.track,
                              # who opened it and where: GitHub's word, carried into the run's results (credit)
                              fields={**values, "opened_by": issue.user.login, "issue_url": issue.html_url},
                              planned_flops=checked.planned_flops),
        AddLabels(repo=repo, issue_number=issue.number, labels=[add]),
    ]
    if remove in issue.label_names:
        actions.append(RemoveLabel(repo=repo, issue_number=issue.number, label=remove))
    actions.append(UpsertComment(repo=repo, issue_number=issue.number, kind="preregistration",
                                 key=str(issue.number), body=body))
    if wants_starter:
        safe_title = re.sub(r"[^\w .,:-]+", "", issue.title)[:100]
        actions.append(CreateStarter(
            repo=repo, issue_number=issue.number, base=event.repository.default_branch, branch=branch, path=path,
            content=starter(values, title=safe_title, number=issue.number, path=path) if form.name == DATASHOP
            else render("starter_experiment.py.j2", title=safe_title, number=issue.number, path=path),
            title=f"{form.name} #{issue.number}: {safe_title}"[:200],
            body=render("starter_pr.md.j2", number=issue.number, form=form.name, path=path),
        ))
    return actions


def _cell(value: object) -> str:
    if value is None or value == []:
        return "—"
    text = ", ".join(value) if isinstance(value, list) else str(value)
    return text.replace("\n", " ").replace("|", "\\|")[:500]
