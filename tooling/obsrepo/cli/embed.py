"""`obsrepo embed info` and `obsrepo embed pull`: the embedder recall uses (docs/design.md §15)."""

from __future__ import annotations

import click

from .. import errors
from ..ops import EmbedInfo, EmbedPull, run
from .app import main
from .errors import _emit_json, handled
from .options import FORMATS, embedder_option, examples, session


@main.group(epilog=examples("obsrepo embed pull minishlab/potion-base-8M",
                            "OBSREPO_EMBEDDER=ollama:nomic-embed-text obsrepo embed info \"invoice paid\""))
def embed() -> None:
    """The embedder of recall: which one is configured, and fetching a local model.

    Choose one with OBSREPO_EMBEDDER (or --embedder): none (lexical search only),
    model2vec:<model folder>, openai:<model> (OBSREPO_EMBEDDER_URL, the key in OPENAI_API_KEY
    or the variable OBSREPO_EMBEDDER_KEY_ENV names) or ollama:<model>.
    """


@embed.command(epilog=examples("obsrepo embed info", "obsrepo embed info --embedder model2vec:.obsrepo/models/m \"bill settled\""))
@embedder_option
@click.argument("texts", nargs=-1, metavar="[TEXT]...")
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: one fact a line; json: the whole answer, vectors included.")
@handled
def info(embedder: str | None, texts: tuple[str, ...], output_format: str) -> int:
    """The configured embedder: provider, fingerprint and dimensions; with TEXTs, their vectors.

    A way to see that a model folder or a server answers as configured before indexing.
    """
    state = run(session(embedder=embedder), EmbedInfo(texts=texts)).to_json()
    if output_format == "json":
        _emit_json(state)
        return errors.EXIT_OK
    click.echo(f"provider:    {state['provider']}")
    if state["fingerprint"] is not None:
        click.echo(f"fingerprint: {state['fingerprint']}\ndimension:   {state['dimension']}")
    for text, vector in zip(texts, state["vectors"]):
        shown = ", ".join(f"{value:.4f}" for value in vector[:8])
        click.echo(f"{text!r}: [{shown}{', …' if len(vector) > 8 else ''}]")
    return errors.EXIT_OK


@embed.command(epilog=examples("obsrepo embed pull minishlab/potion-base-8M", "obsrepo embed pull wordllama:l2_supercat_256"))
@click.argument("hub_id", metavar="HUB_ID")
@click.option("--to", metavar="FOLDER", help="Where to put it (default .obsrepo/models/<owner>--<name>).")
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: where it went and how to use it; json: the same as an object.")
@handled
def pull(hub_id: str, to: str | None, output_format: str) -> int:
    """Download a model2vec model from the Hugging Face hub: the one command that downloads.

    wordllama:<model>_<dims> (e.g. wordllama:l2_supercat_256) instead converts the token table
    the installed wordllama package ships (the wordllama extra), without a network.
    Prints the OBSREPO_EMBEDDER value that uses it. Needs the semantic extra.
    """
    pulled = run(session(), EmbedPull(hub_id=hub_id, to=to)).to_json()
    if output_format == "json":
        _emit_json(pulled)
    else:
        click.echo(f"{pulled['hub_id']} is in {pulled['folder']}\nuse it with: OBSREPO_EMBEDDER={pulled['embedder']}")
    return errors.EXIT_OK
