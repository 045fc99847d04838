"""`check_run.rerequested` and `check_suite.rerequested`: GitHub's "Re-run" buttons on the bot's checks re-plan the
pull request's head (a plan that timed out or hit a flaky GitHub read gets a second chance without a push).

GitHub sends these only to the App that owns the check (run or suite). The event names a head SHA and, for PRs
whose branch is in the repository, the PRs; a fork's PR is found among the open PRs by that head SHA (so a
re-run on an older commit of a fork's PR finds nothing to plan). A listed PR's current head is planned, even when
the re-run was asked on an older commit's check: the plan is of the code that would run. A closed PR is left
alone; a draft gets its short note again.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.actions import Action
from bot.github.events import CheckRunEvent, CheckSuiteEvent
from bot.handlers.env import Env
from bot.handlers.pulls import PullFacts, draft_note, plan_facts
from bot.ledger import LedgerView
from bot.plans.report import CHECK_NAME as PLAN_CHECK
from bot.plans.report import plan_actions
from bot.runs.publisher import CHECK_NAME as RUN_CHECK

OUR_CHECKS = (PLAN_CHECK, RUN_CHECK)
MAX_PULLS = 5  # one head SHA is rarely the head of more PRs; bound the planning a button press can cause


@dataclass(frozen=True)
class CheckFacts:
    pulls: list[PullFacts]


def gather(event: CheckRunEvent | CheckSuiteEvent, env: Env) -> CheckFacts:
    repo = event.repository.full_name
    if isinstance(event, CheckRunEvent):
        if event.check_run.name not in OUR_CHECKS:
            return CheckFacts([])
        sha, listed = event.check_run.head_sha, event.check_run.pull_requests
    else:
        sha, listed = event.check_suite.head_sha, event.check_suite.pull_requests
    numbers = [p.number for p in listed] or [int(p["number"]) for p in env.gh.pulls_for_sha(repo, sha)]
    facts = []
    for n in sorted(set(numbers))[:MAX_PULLS]:
        pr = env.gh.get_pull(repo, n)
        if pr.get("state") == "open":
            facts.append(plan_facts(env, repo, pr, plan=True))
    return CheckFacts(facts)


def decide(event: CheckRunEvent | CheckSuiteEvent, facts: CheckFacts, view: LedgerView) -> list[Action]:
    repo = event.repository.full_name
    actions: list[Action] = []
    for f in facts.pulls:
        pr = f.pull
        if f.plans is not None:
            actions += plan_actions(repo, pr.number, pr.head_sha, pr.experiments, f.plans, f.prereg, f.prereg_flops,
                                    f.config)
        elif pr.draft:
            actions.append(draft_note(repo, pr.number))
    return actions
