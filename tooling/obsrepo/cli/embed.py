"""`obsrepo embed info` and `obsrepo embed pull`: the embedder recall uses (docs/design.md §15)."""

from __future__ import annotations

from ..ops import Answer, EmbedInfo, EmbedPull
from .app import main
from .declare import argument, command
from .errors import _emit_json
from .options import embedder_option, examples, output_format


@main.group(epilog=examples("obsrepo embed pull minishlab/potion-base-8M",
                            "OBSREPO_EMBEDDER=ollama:nomic-embed-text obsrepo embed info \"invoice paid\""))
def embed() -> None:
    """The embedder of recall: which one is configured, and fetching a local model.

    Choose one with OBSREPO_EMBEDDER (or --embedder): none (lexical search only),
    model2vec:<model folder>, openai:<model> (OBSREPO_EMBEDDER_URL, the key in OPENAI_API_KEY
    or the variable OBSREPO_EMBEDDER_KEY_ENV names) or ollama:<model>.
    """


@command(EmbedInfo, group=embed, names={"texts": argument("[TEXT]...")},
         options=(embedder_option,
                  output_format(help_text="text: one fact a line; json: the whole answer, vectors included.")),
         examples=("obsrepo embed info", "obsrepo embed info --embedder model2vec:.obsrepo/models/m \"bill settled\""))
def info(answer: Answer, output_format: str, request: EmbedInfo) -> str | None:
    """The configured embedder: provider, fingerprint and dimensions; with TEXTs, their vectors.

    A way to see that a model folder or a server answers as configured before indexing.
    """
    state = answer.to_json()
    if output_format == "json":
        _emit_json(state)
        return None
    lines = [f"provider:    {state['provider']}"]
    if state["fingerprint"] is not None:
        lines.append(f"fingerprint: {state['fingerprint']}\ndimension:   {state['dimension']}")
    for text, vector in zip(request.texts, state["vectors"]):
        shown = ", ".join(f"{value:.4f}" for value in vector[:8])
        lines.append(f"{text!r}: [{shown}{', …' if len(vector) > 8 else ''}]")
    return "\n".join(lines)


@command(EmbedPull, group=embed, names={"hub_id": argument("HUB_ID")},
         options=(output_format(help_text="text: where it went and how to use it; json: the same as an object."),),
         examples=("obsrepo embed pull minishlab/potion-base-8M", "obsrepo embed pull wordllama:l2_supercat_256"))
def pull(answer: Answer, output_format: str) -> str | None:
    """Download a model2vec model from the Hugging Face hub: the one command that downloads.

    wordllama:<model>_<dims> (e.g. wordllama:l2_supercat_256) instead converts the token table
    the installed wordllama package ships (the wordllama extra), without a network.
    Prints the OBSREPO_EMBEDDER value that uses it. Needs the semantic extra.
    """
    pulled = answer.to_json()
    if output_format == "json":
        _emit_json(pulled)
        return None
    return f"{pulled['hub_id']} is in {pulled['folder']}\nuse it with: OBSREPO_EMBEDDER={pulled['embedder']}"
