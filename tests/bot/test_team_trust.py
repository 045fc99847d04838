"""Trust through teams, against the sandbox GitHub: a maintainer through a team with maintain on the repo is
trusted by the collaborator permission alone; a team with read is not; `approver_teams` trusts its members
without a repository role; `/run` end to end by an approver-team member."""

from __future__ import annotations

import httpx

from bot.config.repo_config import RepoConfig
from bot.config.trust import gather_trust, team_ref
from bot.github.client import GitHubClient
from tests.bot import github_spec as gs
from tests.bot.conftest import Lab
from tests.bot.helpers import REPO, bot_comments, experiment_file, repo_files
from tests.bot.test_e2e_pulls import preregister

TEAMS = [
    {"org": "lab", "slug": "ml-leads", "members": {"lead": "member"}, "repos": {REPO: "maintain"}},
    {"org": "lab", "slug": "readers", "members": {"reader": "member"}, "repos": {REPO: "read"}},
    {"org": "lab", "slug": "review-board", "members": {"reviewer": "maintainer"}, "repos": {}},
]


def test_team_roles_and_approver_teams(lab: Lab) -> None:
    d = lab.driver
    files = repo_files()
    files[".github/openlab.yml"] += "\napprover_teams: [review-board]\n"
    d.setup_repo(REPO, files, teams=TEAMS, tokens={"ghs_team_test": "openlab[bot]"})
    gh = GitHubClient(str(d.sandbox.base_url), lambda: "ghs_team_test", write_interval_s=0)
    plain, boarded = RepoConfig(), RepoConfig(approver_teams=["lab/review-board"])

    assert gather_trust(gh, REPO, "lead", plain) == (True, "lead has maintain access")
    ok, why = gather_trust(gh, REPO, "reader", boarded)
    assert not ok and "`read`" in why and "approver_teams" in why
    assert gather_trust(gh, REPO, "reviewer", boarded) == (True, "reviewer is a member of approver team lab/review-board")
    assert not gather_trust(gh, REPO, "reviewer", plain)[0]
    assert not gather_trust(gh, REPO, "reviewer", RepoConfig(approver_teams=["no-such-team"]))[0]
    assert team_ref("review-board", REPO) == ("lab", "review-board") and team_ref("o/t", REPO) == ("o", "t")

    # End to end: the approver-team member's /run approves the head; the read-only team member's is refused.
    n = preregister(lab)
    pr = d.open_pull(REPO, "maintainer", f"exp-{n}", {f"experiments/exp{n:03d}_wider_mlp.py": experiment_file(n)},
                     "Wider", f"Preregistration: #{n}")
    lab.settle(timeout=60)
    d.comment(REPO, pr, "reader", "/run")
    d.comment(REPO, pr, "reviewer", "/run")
    lab.settle()
    replies = [c["body"] for c in bot_comments(d.thread(REPO, pr), "reply")]
    # Only the failed command gets a reply; the approval shows in the sticky PR comment (bot/sticky.py).
    assert len(replies) == 1 and "`read` access" in replies[0]
    assert "Approved for" in bot_comments(d.thread(REPO, pr), "runs")[0]["body"]
    assert [a["approved_by"] for a in lab.bot.ledger.approvals(REPO, pr)] == ["reviewer"]

    if gs.OPENAPI.exists():  # the membership read is GitHub's operation, answered in its shape
        path = "/orgs/lab/teams/review-board/memberships/reviewer"
        template, op = gs.operation("GET", path) or ("", {})
        assert template == "/orgs/{org}/teams/{team_slug}/memberships/{username}"
        resp = httpx.get(f"{d.sandbox.base_url}{path}", headers={"Authorization": "Bearer ghs_team_test"})
        schema = gs.response_schema(op, 200)
        assert schema is not None and not list(gs.validator(schema).iter_errors(resp.json()))
        assert any(r["path"] == path for r in d.requests())
