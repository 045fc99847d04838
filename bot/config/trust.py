"""Who may start runs: a repository role at or above `min_permission` (write by default), a login listed in
`approvers`, or an active member of a team listed in `approver_teams`.

The role comes from `GET /repos/{o}/{r}/collaborators/{u}/permission` (`role_name`), never from
`author_association`, which webhooks report wrongly for private org members. That endpoint already folds in every
way a user holds a role on the repository: direct collaboration, organization base permission, and team grants
(GitHub: "organization members with access through team memberships"). So a maintainer through a team with
maintain or admin on the repo is trusted with one call, without the App needing the organization `members`
permission or walking `GET /repos/{o}/{r}/teams` (which lists teams, not whether this user is in one, and misses
nested and base-permission grants).

`approver_teams` (`org/slug`, or `slug` in the repository owner's organization) is for teams trusted to approve
without a role on the repository (e.g. a lab's review board). It needs one membership read per listed team,
`GET /orgs/{org}/teams/{slug}/memberships/{user}` (App permission: organization members, read), done only when the
role alone does not trust the user. A pending invitation does not count.
"""

from __future__ import annotations

from markupsafe import Markup

from bot.config.repo_config import RepoConfig
from bot.github.client import PERMISSION_ORDER, GitHubClient, GitHubError
from bot.github.escape import code, untrusted

MAX_TEAMS = 10


def decide_trust(user: str, role: str, config: RepoConfig, teams: frozenset[str] = frozenset()) -> tuple[bool, str]:
    """Pure: ``teams`` are the ``approver_teams`` entries the user is an active member of."""
    if user.lower() in {a.lower() for a in config.approvers}:
        return True, f"{user} is listed in approvers"
    rank = PERMISSION_ORDER.index(role) if role in PERMISSION_ORDER else 0
    if rank >= PERMISSION_ORDER.index(config.min_permission):
        return True, f"{user} has {role} access"
    if teams:
        return True, f"{user} is a member of approver team {sorted(teams)[0]}"
    via_teams = " or in `approver_teams`" if config.approver_teams else ""
    return False, Markup(f"{untrusted(user, 100)} has {code(role)} access to this repository; starting runs needs "
                         f"{code(config.min_permission)} or above, or being listed in `approvers`{via_teams} in "
                         "`.github/openlab.yml`")


def team_ref(entry: str, repo: str) -> tuple[str, str]:
    """`org/slug` or `slug` (the repository owner's organization) -> (org, slug)."""
    org, _, slug = entry.strip().rpartition("/")
    return (org or repo.split("/")[0]), slug


def gather_trust(gh: GitHubClient, repo: str, user: str, config: RepoConfig) -> tuple[bool, str]:
    """Read what trust depends on (role, then approver-team memberships only if needed) and decide."""
    role = gh.permission(repo, user)
    trusted, reason = decide_trust(user, role, config)
    if trusted or not config.approver_teams:
        return trusted, reason
    member: set[str] = set()
    for entry in config.approver_teams[:MAX_TEAMS]:
        org, slug = team_ref(entry, repo)
        try:
            if gh.team_membership(org, slug, user) == "active":
                member.add(f"{org}/{slug}")
                break
        except GitHubError as err:
            if err.status not in (403, 404):  # no `members` permission, or no such team: not a member
                raise
    return decide_trust(user, role, config, frozenset(member))
