"""The embedder operations (docs/design.md §15): what the configured embedder is, and fetching
a local model, the one code path that downloads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from ..errors import EmbedderFault, UsageError
from .fields import Field, text_field
from .registry import Answer, operation

if TYPE_CHECKING:
    from .session import Session


@dataclass(frozen=True)
class EmbedInfo:
    """The session's embedder: provider, fingerprint and dimensions; with `texts`, their vectors
    (a way to see that a model or a server answers as configured)."""

    texts: Annotated[tuple[str, ...], Field("Texts to embed (their vectors are shown).")] = ()


class EmbedderState(Answer):
    """{provider, fingerprint, dimension, vectors}; provider "none" when no embedder is configured."""


@operation("embed_info", "reads")
def embed_info(session: Session, request: EmbedInfo) -> EmbedderState:
    embedder = session.embedder()
    if embedder is None:
        if request.texts:
            raise UsageError("embedder: none is configured, so nothing can be embedded: set OBSREPO_EMBEDDER or `embedder` "
                             "(model2vec:<model folder>, openai:<model>, ollama:<model>)", parameter="embedder")
        return EmbedderState({"provider": "none", "fingerprint": None, "dimension": None, "vectors": []})
    vectors = embedder.embed(list(request.texts))
    return EmbedderState({"provider": embedder.provider, "fingerprint": embedder.fingerprint,
                          "dimension": embedder.dimension, "vectors": [[round(v, 6) for v in vector] for vector in vectors]})


@dataclass(frozen=True)
class EmbedPull:
    """Download the model2vec model `hub_id` (`owner/name` on the Hugging Face hub) into `to`
    (default `.obsrepo/models/<owner>--<name>` of the repository)."""

    hub_id: Annotated[str, text_field("owner/name on the Hugging Face hub, or wordllama:<model>_<dims>.", 256)]
    to: Annotated[str | None, Field("Where to put it (default .obsrepo/models/<owner>--<name>).", placeholder="FOLDER")] = None


class PulledModel(Answer):
    """{hub_id, folder, embedder}: `embedder` is the OBSREPO_EMBEDDER value that uses it."""


@operation("embed_pull", "writes")
def embed_pull(session: Session, request: EmbedPull) -> PulledModel:
    if request.hub_id.startswith("wordllama:"):
        return _converted(session, request)
    owner, slash, name = request.hub_id.partition("/")
    if not slash or not owner or not name or "/" in name or any(part in ("", ".", "..") for part in (owner, name)):
        raise UsageError(f"hub_id '{request.hub_id}' is not a hub id of the form owner/name "
                         "(e.g. minishlab/potion-base-8M)", parameter="hub_id")
    folder = os.path.abspath(request.to or os.path.join(session.root, ".obsrepo", "models", f"{owner}--{name}"))
    _download(request.hub_id, folder)
    from ..embed.local import Model2Vec

    model = Model2Vec.open(folder).load()  # proof that what came is a model this provider reads
    return PulledModel({"hub_id": request.hub_id, "folder": folder, "embedder": f"model2vec:{folder}",
                        "fingerprint": model.fingerprint, "dimension": model.dimension})


def _converted(session: Session, request: EmbedPull) -> PulledModel:
    """`wordllama:<model>_<dims>`: the installed `wordllama` package's token table and tokenizer
    as a model2vec folder (embed/wordllama.py), made here without a network."""
    from ..embed import wordllama
    from ..embed.local import Model2Vec

    name = request.hub_id.removeprefix("wordllama:")
    try:
        wordllama.parse(name)
    except ValueError as exc:
        raise UsageError(f"hub_id {exc}", parameter="hub_id") from None
    source = wordllama.installed_package()
    if source is None:
        raise EmbedderFault(f"'{request.hub_id}' is converted from the wordllama package, which is not installed: "
                            "pip install 'obsrepo[wordllama]'", provider="model2vec", model=request.hub_id)
    folder = os.path.abspath(request.to or os.path.join(session.root, ".obsrepo", "models", f"wordllama--{name}"))
    try:
        wordllama.convert(source, name, folder)
    except (OSError, KeyError, ValueError) as exc:
        raise EmbedderFault(f"the wordllama package at {source} does not hold {name} as expected: {exc}",
                            provider="model2vec", model=request.hub_id, folder=folder) from None
    model = Model2Vec.open(folder).load()
    return PulledModel({"hub_id": request.hub_id, "folder": folder, "embedder": f"model2vec:{folder}",
                        "fingerprint": model.fingerprint, "dimension": model.dimension})


def _download(hub_id: str, folder: str) -> None:
    from ..embed.local import MODEL_FILES
    from ..errors import missing_extra

    try:
        from huggingface_hub import snapshot_download
    except ModuleNotFoundError as exc:
        raise (missing_extra(exc) or exc) from None
    try:
        snapshot_download(hub_id, local_dir=folder, allow_patterns=[*MODEL_FILES, "README.md", "modules.json"])
    except Exception as exc:  # noqa: BLE001 - the hub's many failures (network, unknown id, auth) are one refusal
        raise EmbedderFault(f"the model '{hub_id}' could not be downloaded to {folder}: {_why(exc)}. Without a network "
                            f"here, run `obsrepo embed pull {hub_id}` on a connected machine and copy the folder it "
                            f"writes (holding {', '.join(MODEL_FILES)}) to {folder}, then set "
                            f"OBSREPO_EMBEDDER=model2vec:{folder}", provider="model2vec", model=hub_id, folder=folder) from None


def _why(exc: Exception) -> str:
    """The hub client's failure in a few plain words, on one line (its messages run to
    several lines of its own terms)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectionError", "ConnectError", "TimeoutException"}:
        return "the hub could not be reached (no network, or HF_HUB_OFFLINE is set)"
    if names & {"RepositoryNotFoundError", "GatedRepoError"}:
        return "the hub has no such model, or it needs a login"
    if names & {"RevisionNotFoundError", "EntryNotFoundError"}:
        return "the hub's copy of it lacks a file a model needs"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f" ({exc.filename})" if exc.filename else "")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return " ".join(first.split())[:200]
