"""`provider:model` text → an embedder, with the settings §15 reads from the environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import UsageError
from . import DEFAULT_KEY_ENV, KEY_ENV_ENV, PROVIDERS, TIMEOUT_ENV, URL_ENV

if TYPE_CHECKING:
    from . import Embedder

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "ollama": "http://localhost:11434"}
DEFAULT_TIMEOUT = 30.0  # seconds for each whole request (docs/design.md §8b)


def embedder_of(spec: str, field: str, environ: Mapping[str, str]) -> Embedder | None:
    provider, colon, model = spec.partition(":")
    if spec == "none":
        return None
    if provider not in PROVIDERS or provider == "none":
        raise UsageError(f"{field} '{spec}' names no known embedding provider: use none, model2vec:<model folder>, "
                         "openai:<model> or ollama:<model>", parameter=field)
    if not colon or not model.strip():
        raise UsageError(f"{field} '{spec}' names no model: write {provider}:<{'model folder' if provider == 'model2vec' else 'model'}>",
                         parameter=field)
    if provider == "model2vec":
        from .local import Model2Vec

        return Model2Vec.open(model)
    from .remote import Remote

    key_env = environ.get(KEY_ENV_ENV) or DEFAULT_KEY_ENV
    return Remote(provider, model, url=_url(provider, environ), key=environ.get(key_env) or None, key_env=key_env,
                  timeout=_timeout(environ))


def _url(provider: str, environ: Mapping[str, str]) -> str:
    """The base URL: as the OpenAI SDK takes it (`http://host:port/v1`), for Ollama its origin."""
    url = (environ.get(URL_ENV) or DEFAULT_URLS[provider]).rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) == 0:
        raise UsageError(f"{URL_ENV} '{url}' is not an http:// or https:// URL", parameter=URL_ENV)
    return url


def _timeout(environ: Mapping[str, str]) -> float:
    text = environ.get(TIMEOUT_ENV)
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise UsageError(f"{TIMEOUT_ENV} '{text}' is not a number of seconds between 0 and 3600", parameter=TIMEOUT_ENV)
    return seconds
