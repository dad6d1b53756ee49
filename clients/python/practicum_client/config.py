"""Where the server is and which key to use: arguments, else environment variables, else a config file.

PRACTICUM_URL, PRACTICUM_API_KEY, PRACTICUM_PROJECT       environment variables
PRACTICUM_CONFIG (default ~/.config/practicum/config.toml) a TOML file with `url`, `key`, `project`
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from practicum_client.errors import PracticumError

ENV = {"url": "PRACTICUM_URL", "key": "PRACTICUM_API_KEY", "project": "PRACTICUM_PROJECT"}


def config_path() -> Path:
    explicit = os.environ.get("PRACTICUM_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "practicum" / "config.toml"


@dataclass(frozen=True)
class Settings:
    url: str
    key: str
    project: str | None = None


def _file_values(path: Path) -> dict[str, str]:
    if not path.is_file():
        if os.environ.get("PRACTICUM_CONFIG"):
            raise PracticumError("config_missing", f"PRACTICUM_CONFIG names {path}, which is not a file")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PracticumError("config_invalid", f"{path}: {exc}") from None
    unknown = sorted(set(data) - set(ENV))
    if unknown:
        raise PracticumError("config_invalid", f"{path}: unknown key {unknown[0]!r}; use url, key, project")
    for name, value in data.items():
        if not isinstance(value, str):
            raise PracticumError("config_invalid", f"{path}: {name} must be a string, got {type(value).__name__}")
    return data


def settings_resolve(*, url: str | None = None, key: str | None = None, project: str | None = None) -> Settings:
    """The first of: the argument, the environment variable, the config file; url and key are required."""
    given = {"url": url, "key": key, "project": project}
    values: dict[str, str | None] = {name: given[name] or os.environ.get(variable) or None for name, variable in ENV.items()}
    if any(values[name] is None for name in ENV):
        from_file = _file_values(config_path())
        values = {name: value or from_file.get(name) for name, value in values.items()}
    for name in ("url", "key"):
        if not values[name]:
            raise PracticumError("config_missing", f"no {name}: pass {name}=, set {ENV[name]}, or write `{name} = ...` in {config_path()}")
    url_value = str(values["url"])
    if not url_value.startswith(("http://", "https://")):
        raise PracticumError("config_invalid", f"url={url_value!r} must start with http:// or https://")
    return Settings(url=url_value.rstrip("/"), key=str(values["key"]), project=values["project"])
