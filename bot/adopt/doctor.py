"""`openlab doctor`: check a deployment where it stands and say how to fix each failing check.

Each check reads the same settings the bot and runner read (``OPENLAB_*``, ``RAY_*``, ``WANDB_*`` and
``.github/openlab.yml`` of the repository in the working directory), tries the real thing where it is cheap (signs
a JWT with the App key, opens the ledger, writes and removes a probe in the store, runs the sandbox tool, calls the
Ray Jobs API) and returns ok / warn / FAIL with the fix. Nothing here raises to the user: a check that crashes is a
FAIL naming the exception.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import OpenlabError

if TYPE_CHECKING:
    from bot.config.repo_config import RepoConfig

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Context:
    root: Path
    mode: str  # app | actions
    env: dict[str, str]

    def get(self, name: str) -> str | None:
        return self.env.get(name) or None


def check_webhook_secrets(ctx: Context) -> Check:
    name = "webhook secrets"
    if ctx.mode == "actions":
        return Check(name, OK, "not needed in Actions mode (GitHub runs the workflows)")
    from bot.config.settings import WEAK_SECRETS

    secrets = [s.strip() for s in (ctx.get("OPENLAB_WEBHOOK_SECRETS") or "").split(",") if s.strip()]
    fix = "set OPENLAB_WEBHOOK_SECRETS to the App's webhook secret (`openlab app create` writes one)"
    if not secrets:
        return Check(name, FAIL, "OPENLAB_WEBHOOK_SECRETS is not set", fix)
    if any(s.lower() in WEAK_SECRETS or len(s) < 8 for s in secrets):
        return Check(name, FAIL, "a default or short (<8 chars) secret", fix + "; use 20+ random characters")
    return Check(name, OK, f"{len(secrets)} secret(s)")


def check_app_key(ctx: Context) -> Check:
    name = "GitHub App key"
    if ctx.mode == "actions":
        return Check(name, OK, "not needed in Actions mode (GITHUB_TOKEN)")
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    app_id, key_path = ctx.get("OPENLAB_APP_ID"), ctx.get("OPENLAB_PRIVATE_KEY_PATH")
    if not app_id or not key_path:
        return Check(name, FAIL, "OPENLAB_APP_ID / OPENLAB_PRIVATE_KEY_PATH not set",
                     "run `openlab app create`, or set both from the App's settings page")
    if not app_id.isdigit():
        return Check(name, FAIL, f"OPENLAB_APP_ID={app_id!r} is not a number", "use the App's numeric id")
    try:
        pem = Path(key_path).read_bytes()
    except OSError as err:
        return Check(name, FAIL, f"cannot read {key_path}: {err.strerror}", "point OPENLAB_PRIVATE_KEY_PATH at the App's .pem")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, RSAPrivateKey):
            raise ValueError("not an RSA key")
        from bot.github.auth import AppAuth

        token = AppAuth(app_id, pem.decode(), "https://api.github.com").app_jwt()  # the JWT the bot sends GitHub
        claims = jwt.decode(token, key.public_key(), algorithms=["RS256"])
        if claims["iss"] != app_id or claims["exp"] - claims["iat"] > 600:  # GitHub's limits
            raise ValueError("the JWT's claims are outside what GitHub accepts")
    except (ValueError, TypeError, jwt.PyJWTError) as err:
        return Check(name, FAIL, f"{key_path}: not a usable RSA private key ({str(err).splitlines()[0]})",
                     "download a new private key from the App's settings page")
    return Check(name, OK, f"App {app_id}: key signs the RS256 JWT GitHub expects (iss, 10 min window)")


def check_signing_key(ctx: Context) -> Check:
    name = "signing key"
    from runner import attest

    pem = ctx.get("OPENLAB_SIGNING_KEY")
    path = ctx.get("OPENLAB_SIGNING_KEY_FILE")
    fix = "set OPENLAB_SIGNING_KEY (or _FILE) to the private key `openlab init` wrote"
    if pem is None and path:
        try:
            pem = Path(path).read_text()
        except OSError as err:
            return Check(name, FAIL, f"cannot read {path}: {err.strerror}", fix)
    if pem is None:
        return Check(name, WARN, "not set: results are published unsigned", fix)
    try:
        priv = attest.load_private_key(pem.encode())
    except ValueError as err:
        return Check(name, FAIL, f"not an Ed25519 private key ({str(err).splitlines()[0]})", fix)
    pub_file = ctx.root / ".github" / "openlab.pub"
    kid = attest.key_id(priv.public_key())
    if pub_file.exists() and attest.key_id(attest.load_public_key(pub_file.read_bytes())) != kid:
        return Check(name, FAIL, f"key {kid} does not match .github/openlab.pub",
                     "use the private key of the committed public key, or commit this key's public half")
    return Check(name, OK, f"key {kid}")


def check_ray(ctx: Context) -> Check:
    name = "Ray"
    addr = ctx.get("RAY_API_SERVER_ADDRESS") or ctx.get("RAY_ADDRESS")
    if not addr:
        return Check(name, WARN, "RAY_ADDRESS not set: runs use an embedded local Ray on the bot host",
                     "set RAY_ADDRESS to the cluster's dashboard URL (http://HEAD:8265)")
    if not ctx.get("RAY_AUTH_TOKEN") and not ctx.get("RAY_AUTH_TOKEN_PATH"):
        return Check(name, FAIL, f"{addr}: RAY_AUTH_TOKEN is not set",
                     "set RAY_AUTH_TOKEN (and RAY_AUTH_MODE=token): unauthenticated Ray runs anyone's code")
    from runner.executor.dispatch import _address, _client

    url = _address(addr)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_TOKEN", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    try:  # the bot's own Jobs API client, which reads the token from the environment
        for k in saved:
            if ctx.get(k):
                os.environ[k] = ctx.get(k) or ""
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        jobs = _client(addr).list_jobs()
    except OpenlabError as err:
        return Check(name, FAIL, str(err).splitlines()[0], "start the cluster, fix RAY_ADDRESS or its RAY_AUTH_TOKEN")
    except Exception as err:  # noqa: BLE001 - Ray's own errors (auth refused, bad answer)
        return Check(name, FAIL, f"{url}: {type(err).__name__}: {str(err).splitlines()[0][:160]}",
                     "check RAY_AUTH_TOKEN matches the cluster's token")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Check(name, OK, f"{url}: Jobs API answers ({len(jobs)} jobs)")


def check_store(ctx: Context) -> Check:
    name = "store"
    from runner import store

    prefix = ctx.get("OPENLAB_STORAGE_PREFIX") or _repo_config(ctx).storage_prefix
    probe = store.join(prefix, f".openlab-doctor-{uuid.uuid4().hex[:8]}")
    try:
        store.atomic_write_text(probe, "probe\n")
        ok = store.read_text(probe) == "probe\n"
        if store.is_local(probe):
            store.local_path(probe).unlink()
        else:
            import fsspec

            fsspec.url_to_fs(probe)[0].rm(probe)
    except Exception as err:  # noqa: BLE001 - any storage failure is this check's answer
        return Check(name, FAIL, f"{prefix}: cannot write ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})",
                     "set OPENLAB_STORAGE_PREFIX (or storage_prefix in .github/openlab.yml) to a writable path or gs:// bucket")
    return Check(name, OK if ok else FAIL, f"{prefix}: wrote and removed a probe")


def check_sandbox(ctx: Context) -> Check:
    name = "plan sandbox"
    bwrap = shutil.which("bwrap", path=ctx.get("PATH") or os.defpath)
    fix = "install bubblewrap (apt-get install bubblewrap): PR code is planned only inside it"
    if ctx.mode == "actions":
        return Check(name, OK, "Actions mode plans in an unprivileged job")
    if not bwrap:
        return Check(name, FAIL, "bwrap not found on PATH", fix)
    proc = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "true"],
                          capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        return Check(name, FAIL, f"bwrap cannot make a sandbox: {proc.stderr.strip()[:120]}",
                     "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)")
    return Check(name, OK, bwrap)


def check_wandb(ctx: Context) -> Check:
    name = "W&B"
    mode = (ctx.get("WANDB_MODE") or ("online" if ctx.get("WANDB_API_KEY") else "offline")).lower()
    if mode not in ("online", "offline", "disabled", "dryrun", "run"):
        return Check(name, FAIL, f"WANDB_MODE={mode!r}", "set WANDB_MODE to online, offline or disabled")
    if mode in ("online", "run") and not ctx.get("WANDB_API_KEY"):
        return Check(name, FAIL, "online but WANDB_API_KEY is not set", "set WANDB_API_KEY or WANDB_MODE=offline")
    if mode != "online":
        return Check(name, WARN, f"{mode}: run pages link no W&B dashboard", "set WANDB_API_KEY for online tracking")
    return Check(name, OK, f"online, project {ctx.get('WANDB_PROJECT') or _repo_config(ctx).wandb_project}")


def check_site(ctx: Context) -> Check:
    url = _repo_config(ctx).site_url
    if not url:
        return Check("site URL", WARN, "site_url not set in .github/openlab.yml: comments link no run pages",
                     "set site_url to the lab's GitHub Pages URL")
    if not url.startswith("https://"):
        return Check("site URL", WARN, f"{url} is not https", "serve the site over https")
    return Check("site URL", OK, url)


def check_ledger(ctx: Context) -> Check:
    name = "ledger"
    from bot.ledger import Ledger

    url = ctx.get("OPENLAB_LEDGER_URL") or "sqlite:///openlab-ledger.sqlite3"
    shown = url.split("@")[-1] if "@" in url else url  # never print a password
    try:
        ledger = Ledger(url)
        ledger.engine.dispose()
    except OpenlabError as err:
        return Check(name, FAIL, str(err), "install the extra it names")
    except Exception as err:  # noqa: BLE001 - any database failure is this check's answer
        return Check(name, FAIL, f"{shown}: {type(err).__name__}: {str(err).splitlines()[0]}",
                     "set OPENLAB_LEDGER_URL to a writable SQLite file or a reachable Postgres")
    if ctx.mode == "actions" and url.startswith("sqlite"):
        return Check(name, FAIL, f"{shown}: SQLite does not outlive an Actions job",
                     "set the OPENLAB_LEDGER_URL secret to a Postgres URL")
    return Check(name, OK, f"{shown}: opened, tables present")


def check_repo_config(ctx: Context) -> Check:
    try:
        from bot.config.repo_config import CONFIG_PATH

        path = ctx.root / CONFIG_PATH
        _repo_config(ctx, strict=True)
    except OpenlabError as err:
        return Check("openlab.yml", FAIL, str(err), "fix the line it names")
    return Check("openlab.yml", OK if path.exists() else WARN,
                 "valid" if path.exists() else "missing: documented defaults", "" if path.exists() else "run `openlab init`")


def _repo_config(ctx: Context, strict: bool = False) -> RepoConfig:
    from bot.config.repo_config import CONFIG_PATH, parse_repo_config

    path = ctx.root / CONFIG_PATH
    try:
        return parse_repo_config(path.read_text() if path.exists() else None)
    except OpenlabError:
        if strict:
            raise
        from bot.config.repo_config import RepoConfig

        return RepoConfig()


CHECKS: list[Callable[[Context], Check]] = [
    check_repo_config, check_webhook_secrets, check_app_key, check_signing_key, check_ray, check_store,
    check_sandbox, check_wandb, check_site, check_ledger,
]


def run_checks(ctx: Context) -> list[Check]:
    out = []
    for fn in CHECKS:
        try:
            out.append(fn(ctx))
        except Exception as err:  # noqa: BLE001 - doctor reports, it never crashes
            label = fn.__name__.removeprefix("check_").replace("_", " ")
            out.append(Check(label, FAIL, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"))
    return out


def table(checks: list[Check]) -> str:
    w = max(len(c.name) for c in checks)
    lines = [f"{'check':<{w}}  status  detail", f"{'-' * w}  ------  ------"]
    for c in checks:
        lines.append(f"{c.name:<{w}}  {c.status:<6}  {c.detail}")
        if c.fix and c.status != OK:
            lines.append(f"{'':<{w}}  {'':<6}  fix: {c.fix}")
    return "\n".join(lines)
