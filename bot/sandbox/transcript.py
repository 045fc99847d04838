"""The demo's transcript: issue and PR threads from the sandbox, rendered as GitHub would show them.

Comment bodies are Markdown. Like GitHub, hidden ``<!-- ... -->`` markers are not shown; HTML is rendered only
for the bot's own comments (which escape every untrusted string before posting), and shown as text for
people's comments, so a contributor cannot inject markup into the transcript.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from pydantic import BaseModel

from bot.sandbox import shapes
from leaderboard.pages import templates_dir

HIDDEN = re.compile(r"<!--.*?-->", re.S)
_TRUSTED_MD = (
    MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table").enable("strikethrough")
)
_PLAIN_MD = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")


class Comment(BaseModel):
    id: int
    user: str
    body: str
    reactions: list[str] = []


class CheckRun(BaseModel):
    name: str
    status: str
    conclusion: str | None = None
    title: str = ""
    summary: str = ""


class ThreadView(BaseModel):
    number: int
    kind: str
    title: str
    author: str = ""
    body: str
    state: str
    labels: list[str]
    head_sha: str | None = None
    comments: list[Comment]
    check_runs: list[CheckRun] = []


def fetch_thread(sandbox_url: str, repo: str, number: int, kind: str, author: str = "") -> ThreadView:
    data = httpx.get(f"{sandbox_url}/_sandbox/threads/{repo}/{number}", timeout=10).raise_for_status().json()
    reactions: dict[int, list[str]] = {}
    for r in data.get("reactions", []):
        reactions.setdefault(r["comment_id"], []).append(r["content"])
    checks = [
        CheckRun(
            name=c.get("name", ""),
            status=c.get("status", ""),
            conclusion=c.get("conclusion"),
            title=(c.get("output") or {}).get("title") or "",
            summary=(c.get("output") or {}).get("summary") or "",
        )
        for c in data.get("check_runs", [])
    ]
    return ThreadView(
        number=number,
        kind=kind,
        title=data["title"],
        author=author,
        body=data.get("body") or "",
        state=data["state"],
        labels=data["labels"],
        head_sha=data.get("head_sha"),
        comments=[
            Comment(id=c["id"], user=c["user"], body=c["body"], reactions=reactions.get(c["id"], []))
            for c in sorted(data["comments"], key=lambda c: c["id"])
        ],
        check_runs=checks,
    )


def markdown_html(body: str, trusted: bool) -> Markup:
    text = HIDDEN.sub("", body or "")
    return Markup((_TRUSTED_MD if trusted else _PLAIN_MD).render(text))  # noqa: S704 - rendered by markdown-it


def plain_text(body: str) -> str:
    """A comment as the terminal shows it: markers hidden, Markdown kept (it reads fine as text)."""
    return HIDDEN.sub("", body or "").strip()


EMOJI = {
    "eyes": "👀",
    "rocket": "🚀",
    "+1": "👍",
    "-1": "👎",
    "hooray": "🎉",
    "heart": "❤️",
    "confused": "😕",
    "laugh": "😄",
}


def localize_images(threads: list[ThreadView], repo: str, read: Callable[[str, str], str | None], out: Path) -> int:
    """Copy every repository file a bot comment shows as an image (``![..](WEB/<repo>/blob/<ref>/<path>?raw=true)``,
    as the results commit's chart) into ``out`` (``read(path, ref)`` gives its text), and point the comment at the copy: the sandbox's
    web addresses serve nothing, and the transcript should show what GitHub would. Returns how many were copied."""
    pattern = re.compile(rf"\]\(({re.escape(shapes.WEB)}/{re.escape(repo)}/blob/([^/)\s]+)/([^?)\s]+)\?raw=true)\)")
    copied: dict[str, str] = {}
    for t in threads:
        for c in t.comments:
            for url, ref, path in pattern.findall(c.body):
                if url not in copied:
                    text = read(path, unquote(ref))
                    if text is None:
                        continue
                    local = out / unquote(ref) / path
                    local.parent.mkdir(parents=True, exist_ok=True)
                    local.write_text(text, encoding="utf-8")
                    copied[url] = f"{out.name}/{unquote(ref)}/{path}"
                c.body = c.body.replace(f"]({url})", f"]({copied[url]})") if url in copied else c.body
    return len(copied)


def write_transcript(threads: list[ThreadView], repo: str, bot_login: str, out: str | Path) -> Path:
    env = Environment(
        loader=FileSystemLoader(str(templates_dir())), autoescape=select_autoescape(default=True)
    )
    env.filters["md"] = lambda body, user: markdown_html(body, trusted=user == bot_login)
    html = env.get_template("transcript.html.j2").render(
        threads=threads,
        repo=repo,
        bot_login=bot_login,
        emoji=EMOJI,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path


def thread_dicts(threads: list[ThreadView]) -> list[dict[str, Any]]:
    return [t.model_dump() for t in threads]
