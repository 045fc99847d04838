"""`openlab keygen`: make the lab's Ed25519 attestation key pair.

The public key is committed at `.github/openlab.pub` so anyone can verify attested results; the private key is a
secret of the deployment (the `OPENLAB_SIGNING_KEY` environment variable or Actions secret, or a file named by
`OPENLAB_SIGNING_KEY_FILE`) and must never be committed.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from runner import attest
from runner.errors import OpenlabError


@click.command("keygen")
@click.option("--public", "public_path", default=".github/openlab.pub", show_default=True,
              help="Where to write the public key (commit this file).")
@click.option("--private", "private_path", required=True, help="Where to write the private key (keep it secret).")
def keygen(public_path: str, private_path: str) -> None:
    """Generate the Ed25519 key pair that signs attested results."""
    priv_file = Path(private_path)
    if priv_file.exists():
        raise OpenlabError(f"{priv_file} exists: refusing to overwrite a private key")
    priv, pub = attest.generate_keypair()
    priv_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(priv_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(priv)
    Path(public_path).parent.mkdir(parents=True, exist_ok=True)
    Path(public_path).write_bytes(pub)
    key_id = attest.key_id(attest.load_public_key(pub))
    click.echo(f"key {key_id}: public -> {public_path} (commit it), private -> {priv_file} (a secret: "
               "set it as OPENLAB_SIGNING_KEY; never commit it)")
