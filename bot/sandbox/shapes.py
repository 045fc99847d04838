"""GitHub-shaped JSON objects (the fields GitHub's OpenAPI description marks required, with plausible values)."""

from __future__ import annotations

from typing import Any

API = "http://sandbox.invalid/api"
WEB = "http://sandbox.invalid"
NOW = "2026-01-01T00:00:00Z"


def user(login: str, uid: int, kind: str = "User") -> dict[str, Any]:
    u = f"{API}/users/{login}"
    return {
        "login": login, "id": uid, "node_id": f"U_{uid}", "avatar_url": f"{WEB}/avatars/{uid}", "gravatar_id": "",
        "url": u, "html_url": f"{WEB}/{login}", "followers_url": f"{u}/followers",
        "following_url": f"{u}/following{{/other_user}}", "gists_url": f"{u}/gists{{/gist_id}}",
        "starred_url": f"{u}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{u}/subscriptions",
        "organizations_url": f"{u}/orgs", "repos_url": f"{u}/repos", "events_url": f"{u}/events{{/privacy}}",
        "received_events_url": f"{u}/received_events", "type": kind, "site_admin": False, "user_view_type": "public",
    }


_REPO_URLS = [
    "archive_url", "assignees_url", "blobs_url", "branches_url", "collaborators_url", "comments_url", "commits_url",
    "compare_url", "contents_url", "contributors_url", "deployments_url", "downloads_url", "events_url", "forks_url",
    "git_commits_url", "git_refs_url", "git_tags_url", "issue_comment_url", "issue_events_url", "issues_url",
    "keys_url", "labels_url", "languages_url", "merges_url", "milestones_url", "notifications_url", "pulls_url",
    "releases_url", "stargazers_url", "statuses_url", "subscribers_url", "subscription_url", "tags_url", "teams_url",
    "trees_url", "hooks_url",
]


def repository(full_name: str, rid: int, owner: dict[str, Any], default_branch: str = "main",
               fork: bool = False) -> dict[str, Any]:
    u = f"{API}/repos/{full_name}"
    out: dict[str, Any] = {k: f"{u}/{k.removesuffix('_url')}" for k in _REPO_URLS}
    out.update({
        "id": rid, "node_id": f"R_{rid}", "name": full_name.split("/")[1], "full_name": full_name, "owner": owner,
        "private": False, "html_url": f"{WEB}/{full_name}", "description": None, "fork": fork, "url": u,
        "git_url": f"git://sandbox.invalid/{full_name}.git", "ssh_url": f"git@sandbox.invalid:{full_name}.git",
        "clone_url": f"{WEB}/{full_name}.git", "svn_url": f"{WEB}/{full_name}", "mirror_url": None, "homepage": None,
        "language": "Python", "forks_count": 0, "forks": 0, "stargazers_count": 0, "watchers_count": 0,
        "watchers": 0, "size": 1, "default_branch": default_branch, "open_issues_count": 0, "open_issues": 0,
        "is_template": False, "topics": [], "has_issues": True, "has_projects": False, "has_wiki": False,
        "has_pages": False, "has_downloads": False, "has_discussions": False, "archived": False, "disabled": False,
        "visibility": "public", "pushed_at": NOW, "created_at": NOW, "updated_at": NOW, "license": None,
        "allow_forking": True, "web_commit_signoff_required": False,
    })
    return out


def label(name: str, lid: int) -> dict[str, Any]:
    return {"id": lid, "node_id": f"L_{lid}", "url": f"{API}/labels/{name}", "name": name, "description": None,
            "color": "ededed", "default": False}


def issue(repo: str, number: int, title: str, body: str | None, author: dict[str, Any], labels: list[dict[str, Any]],
          state: str, comments: int, is_pull: bool) -> dict[str, Any]:
    u = f"{API}/repos/{repo}/issues/{number}"
    out: dict[str, Any] = {
        "id": 10_000 + number, "node_id": f"I_{number}", "url": u, "repository_url": f"{API}/repos/{repo}",
        "labels_url": f"{u}/labels{{/name}}", "comments_url": f"{u}/comments", "events_url": f"{u}/events",
        "html_url": f"{WEB}/{repo}/{'pull' if is_pull else 'issues'}/{number}", "number": number, "state": state,
        "state_reason": None, "title": title, "body": body, "user": author, "labels": labels, "assignee": None,
        "assignees": [], "milestone": None, "locked": False, "active_lock_reason": None, "comments": comments,
        "closed_at": None, "created_at": NOW, "updated_at": NOW, "author_association": "NONE", "draft": False,
        "reactions": reactions_summary(u),
    }
    if is_pull:
        out["pull_request"] = {"url": f"{API}/repos/{repo}/pulls/{number}", "html_url": out["html_url"],
                               "diff_url": f"{out['html_url']}.diff", "patch_url": f"{out['html_url']}.patch",
                               "merged_at": None}
    return out


def reactions_summary(url: str) -> dict[str, Any]:
    return {"url": f"{url}/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "confused": 0, "heart": 0,
            "hooray": 0, "eyes": 0, "rocket": 0}


def comment(repo: str, cid: int, issue_number: int, body: str, author: dict[str, Any]) -> dict[str, Any]:
    u = f"{API}/repos/{repo}/issues/comments/{cid}"
    return {"id": cid, "node_id": f"IC_{cid}", "url": u, "html_url": f"{WEB}/{repo}/issues/{issue_number}#c{cid}",
            "body": body, "user": author, "created_at": NOW, "updated_at": NOW,
            "issue_url": f"{API}/repos/{repo}/issues/{issue_number}", "author_association": "NONE",
            "performed_via_github_app": None, "reactions": reactions_summary(u)}


def branch_ref(label_: str, ref: str, sha: str, user_: dict[str, Any], repo: dict[str, Any]) -> dict[str, Any]:
    return {"label": label_, "ref": ref, "sha": sha, "user": user_, "repo": repo}


def pull(repo: str, number: int, title: str, body: str | None, author: dict[str, Any], labels: list[dict[str, Any]],
         state: str, draft: bool, head: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    u = f"{API}/repos/{repo}/pulls/{number}"
    html = f"{WEB}/{repo}/pull/{number}"
    iu = f"{API}/repos/{repo}/issues/{number}"
    return {
        "url": u, "id": 20_000 + number, "node_id": f"PR_{number}", "html_url": html, "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch", "issue_url": iu, "commits_url": f"{u}/commits",
        "review_comments_url": f"{u}/comments", "review_comment_url": f"{API}/repos/{repo}/pulls/comments{{/number}}",
        "comments_url": f"{iu}/comments", "statuses_url": f"{API}/repos/{repo}/statuses/{head['sha']}",
        "number": number, "state": state, "locked": False, "title": title, "user": author, "body": body,
        "labels": labels, "milestone": None, "active_lock_reason": None, "created_at": NOW, "updated_at": NOW,
        "closed_at": None, "merged_at": None, "merge_commit_sha": None, "assignee": None, "assignees": [],
        "requested_reviewers": [], "requested_teams": [], "head": head, "base": base,
        "_links": {k: {"href": v} for k, v in {
            "self": u, "html": html, "issue": iu, "comments": f"{iu}/comments", "review_comments": f"{u}/comments",
            "review_comment": f"{API}/repos/{repo}/pulls/comments{{/number}}", "commits": f"{u}/commits",
            "statuses": f"{API}/repos/{repo}/statuses/{head['sha']}"}.items()},
        "author_association": "NONE", "auto_merge": None, "draft": draft, "merged": False, "mergeable": True,
        "rebaseable": True, "mergeable_state": "clean", "merged_by": None, "comments": 0, "review_comments": 0,
        "maintainer_can_modify": False, "commits": 1, "additions": 1, "deletions": 0, "changed_files": 1,
    }


def app_(app_id: int, owner: dict[str, Any]) -> dict[str, Any]:
    return {"id": app_id, "slug": "openlab", "node_id": f"A_{app_id}", "client_id": "Iv1.sandbox", "owner": owner,
            "name": "openlab", "description": "openlab bot (sandbox)", "external_url": WEB,
            "html_url": f"{WEB}/apps/openlab", "created_at": NOW, "updated_at": NOW,
            "permissions": {"checks": "write", "issues": "write"}, "events": ["issues"]}
