"""`openlab pretrained ...` and `openlab annotate-server`: the Datashop side of the command line."""

from __future__ import annotations

import json

import click


@click.group()
def pretrained() -> None:
    """Pretrained weights (GGUF) in our model."""


@pretrained.command("info")
@click.argument("model", required=False)
def info_cmd(model: str | None) -> None:
    """Print the model section a config needs to start from MODEL (a .gguf path; default: the shipped SmolLM2)."""
    from runner.pretrained import info

    click.echo(json.dumps(info(model), indent=2))


@pretrained.command("export-tokenizer")
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--model", default=None, help="A .gguf path (default: the shipped SmolLM2-135M-Instruct).")
def export_tokenizer(out: str, model: str | None) -> None:
    """Write MODEL's tokenizer as a tokenizers JSON file, for `data.tokenizer` of a run with `train.init_from`."""
    from runner.pretrained import read_header, resolve_model_path

    read_header(resolve_model_path(model)).tokenizer.save(out)
    click.echo(out)


@click.command("annotate-server")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8089, show_default=True, type=int)
@click.option("--model", default=None, help="A .gguf path (default: the shipped SmolLM2-135M-Instruct).")

def annotate_server(host: str, port: int, model: str | None) -> None:
    """Serve a GGUF model with our JAX model behind an OpenAI-compatible API (/v1/chat/completions)."""
    from runner.annotation.server import serve

    serve(host=host, port=port, model=model)


def commands() -> list[click.Command]:
    return [pretrained, annotate_server]
