"""Who may start runs: a repository role at or above `min_permission` (write by default), or a login listed in
`approvers`. The role comes from `GET /repos/{o}/{r}/collaborators/{u}/permission` (`role_name`), never from
`author_association`, which webhooks report wrongly for private org members."""

from __future__ import annotations

from markupsafe import Markup

from bot.escape import code, untrusted
from bot.github import PERMISSION_ORDER
from bot.repo_config import RepoConfig


def decide_trust(user: str, role: str, config: RepoConfig) -> tuple[bool, str]:
    if user.lower() in {a.lower() for a in config.approvers}:
        return True, f"{user} is listed in approvers"
    rank = PERMISSION_ORDER.index(role) if role in PERMISSION_ORDER else 0
    if rank >= PERMISSION_ORDER.index(config.min_permission):
        return True, f"{user} has {role} access"
    return False, Markup(f"{untrusted(user, 100)} has {code(role)} access to this repository; starting runs needs "
                         f"{code(config.min_permission)} or above, or being listed in `approvers` in "
                         "`.github/openlab.yml`")
