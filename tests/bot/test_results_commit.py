"""The results commit: several files as one commit through GitHub's Git database API, against the sandbox, with
every request and answer checked against GitHub's OpenAPI description."""

from __future__ import annotations

import httpx
import pytest

from bot.github.client import GitHubClient
from bot.ledger import Ledger
from bot.runs.publisher import Publisher, PushRefused
from bot.sandbox.driver import SandboxDriver
from bot.sandbox.state import SandboxState
from tests.bot import github_spec as gs
from tests.bot.helpers import REPO, SECRET, repo_files

TOKEN = "ghs_results_commit"


@pytest.fixture
def publisher(tmp_path, sandbox: tuple[str, SandboxState]) -> tuple[Publisher, SandboxDriver, SandboxState]:
    url, state = sandbox
    driver = SandboxDriver(url, None, SECRET)
    driver.setup_repo(REPO, repo_files(), roles={"maintainer": "write"}, tokens={TOKEN: "openlab[bot]"})
    gh = GitHubClient(url, lambda: TOKEN, write_interval_s=0.0, backoff_s=0.01)
    return Publisher(gh, Ledger(f"sqlite:///{tmp_path}/ledger.sqlite3"), "openlab[bot]"), driver, state


def test_files_land_in_one_fast_forward_commit(publisher) -> None:
    pub, driver, state = publisher
    repo = state.repos[REPO]
    before = repo.branches["main"]
    files = {"exp/r/results.json": '{"bpb": 1}\n', "exp/r/pareto.svg": "<svg/>", "exp/r/metrics.jsonl": "{}\n"}
    sha = pub.commit_files(REPO, "main", files, "openlab: results of run r")
    tip = repo.branches["main"]
    assert sha == tip
    assert repo.parents[tip] == [before] and repo.messages[tip] == "openlab: results of run r"
    assert {p: repo.commits[tip][p] for p in files} == files
    assert set(repo.commits[tip]) == set(repo.commits[before]) | set(files)  # the rest of the tree is kept
    # The same contents again: nothing to commit, the branch does not move.
    assert pub.commit_files(REPO, "main", files, "again") is None and repo.branches["main"] == tip
    # One file changed: one more commit holding only that change.
    assert pub.commit_files(REPO, "main", {**files, "exp/r/pareto.svg": "<svg></svg>"}, "chart") is not None
    assert repo.parents[repo.branches["main"]] == [tip]


def test_a_branch_that_moved_gets_the_commit_on_its_new_head(publisher, monkeypatch) -> None:
    pub, driver, state = publisher
    repo = state.repos[REPO]
    real = pub.gh.request
    pushed: list[str] = []

    def racing(method: str, path: str, **kw):  # a contributor pushes between our commit and our ref update
        if method == "PATCH" and not pushed:
            pushed.append(state.commit(REPO, "main", {"theirs.txt": "x"}, None, message="theirs"))
        return real(method, path, **kw)

    monkeypatch.setattr(pub.gh, "request", racing)
    assert pub.commit_files(REPO, "main", {"ours.txt": "y"}, "ours") is not None
    tip = repo.branches["main"]
    assert repo.parents[tip] == pushed and repo.commits[tip]["theirs.txt"] == "x" and repo.commits[tip]["ours.txt"] == "y"
    with pytest.raises(PushRefused):
        pub.commit_files(REPO, "no-such-branch", {"ours.txt": "z"}, "ours")


def test_requests_and_answers_match_githubs_description(publisher) -> None:
    gs.require_specs()
    pub, driver, state = publisher
    pub.commit_files(REPO, "main", {"exp/r/results.json": "{}\n"}, "openlab: results")
    problems, seen = [], set()
    for r in driver.requests():
        if r["path"].startswith("/_sandbox"):
            continue
        found = gs.operation(r["method"], r["path"])
        assert found is not None, (r["method"], r["path"])
        template, op = found
        seen.add(f"{r['method']} {template}")
        problems += gs.request_body_errors(op, r["body"])
    assert {"GET /repos/{owner}/{repo}/git/commits/{commit_sha}", "POST /repos/{owner}/{repo}/git/trees",
            "POST /repos/{owner}/{repo}/git/commits", "PATCH /repos/{owner}/{repo}/git/refs/{ref}"} <= seen
    # The sandbox's answers, replayed, against the response schemas.
    base = driver.sandbox.base_url
    head = state.repos[REPO].branches["main"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    answers = [
        ("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", 200,
         httpx.get(base.join(f"/repos/{REPO}/git/commits/{head}"), headers=auth)),
        ("POST /repos/{owner}/{repo}/git/trees", 201,
         httpx.post(base.join(f"/repos/{REPO}/git/trees"), headers=auth,
                    json={"tree": [{"path": "a.txt", "mode": "100644", "type": "blob", "content": "a"}]})),
    ]
    tree = answers[-1][2].json()["sha"]
    answers.append(("POST /repos/{owner}/{repo}/git/commits", 201, httpx.post(
        base.join(f"/repos/{REPO}/git/commits"), headers=auth, json={"message": "m", "tree": tree, "parents": [head]})))
    answers.append(("PATCH /repos/{owner}/{repo}/git/refs/{ref}", 200, httpx.patch(
        base.join(f"/repos/{REPO}/git/refs/heads/main"), headers=auth, json={"sha": answers[-1][2].json()["sha"]})))
    answers.append(("PATCH /repos/{owner}/{repo}/git/refs/{ref}", 422, httpx.patch(
        base.join(f"/repos/{REPO}/git/refs/heads/main"), headers=auth, json={"sha": head})))
    for key, status, resp in answers:
        assert resp.status_code == status, (key, resp.text)
        method, template = key.split(" ", 1)
        _, op = gs.operation(method, template.replace("{owner}/{repo}", REPO)) or ("", {})
        schema = gs.response_schema(op, status)
        assert schema is not None, key
        problems += [f"{key}: {'/'.join(map(str, e.absolute_path))}: {e.message[:160]}"
                     for e in gs.validator(schema).iter_errors(resp.json())]
    assert not problems, "\n".join(problems)
