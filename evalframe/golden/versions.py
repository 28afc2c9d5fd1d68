"""Golden-set versions: ``golden_vMAJOR.MINOR.json`` beside ``golden_vMAJOR.MINOR.meta.json``.

KnowCode's rule (reference 002 §10.2, item 5): a minor version for additions
(``v1.0`` → ``v1.1``), a major one for a schema change (``v2.0``), and "the
harness always loads the newest version unless pinned". Versions compare as
numbers, so ``v1.10`` is newer than ``v1.9``. The knowcode dataset loader and
``evalframe golden build`` both use these functions, so the two can never
disagree on which file is the newest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from evalframe.core.errors import DataError

__all__ = ["Version", "list_versions", "next_version", "parse_version", "resolve_version"]

_FILE = re.compile(r"^golden_v(\d+)\.(\d+)\.json$")
_TEXT = re.compile(r"^(?:golden_)?v?(\d+)\.(\d+)(?:\.json)?$")


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def stem(self) -> str:
        return f"golden_v{self}"

    @property
    def file(self) -> str:
        return f"{self.stem}.json"

    @property
    def meta(self) -> str:
        return f"{self.stem}.meta.json"


def parse_version(text: str, *, key: str | None = None) -> Version:
    """``"1.0"``, ``"v1.0"`` or ``"golden_v1.0.json"`` as a :class:`Version`."""
    match = _TEXT.match(str(text).strip())
    if match is None:
        raise DataError(
            f"{text!r} is not a golden-set version",
            key=key,
            expected="MAJOR.MINOR, e.g. 1.0 or v1.2",
        )
    return Version(int(match.group(1)), int(match.group(2)))


def list_versions(folder: str | Path) -> list[tuple[Version, Path]]:
    """Every ``golden_vX.Y.json`` in ``folder``, oldest first (none if it does not exist)."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for path in root.iterdir():
        match = _FILE.match(path.name)
        if match and path.is_file():
            found.append((Version(int(match.group(1)), int(match.group(2))), path))
    return sorted(found)


def resolve_version(path: str | Path, pin: str | None = None, *, key: str = "dataset.path") -> Path:
    """The golden file to load: ``path`` itself, or in a folder the newest version (or
    the pinned one, ``pin`` = ``"1.0"``)."""
    p = Path(path)
    if not p.is_dir():
        if pin is not None and p.name != parse_version(pin, key="dataset.version").file:
            raise DataError(
                f"dataset.version={pin} pins a version, but {key} names the file {p.name}",
                key="dataset.version",
                hint=f"point {key} at the folder of versions, or drop dataset.version",
            )
        return p
    versions = list_versions(p)
    if not versions:
        raise DataError(
            f"no golden_vMAJOR.MINOR.json in the folder {p}",
            key=key,
            expected="a golden file, or a folder of versioned ones (golden_v1.0.json, ...)",
        )
    if pin is None:
        return versions[-1][1]
    wanted = parse_version(pin, key="dataset.version")
    for version, file in versions:
        if version == wanted:
            return file
    raise DataError(
        f"version {wanted} is not in {p}",
        key="dataset.version",
        expected="one of: " + ", ".join(str(v) for v, _ in versions),
    )


def _major(schema_version: str | None) -> str | None:
    return None if not schema_version else str(schema_version).split(".", 1)[0]


def next_version(
    current: Version | None, current_schema: str | None, schema: str
) -> tuple[Version, str]:
    """The version a new release gets, and why: ``initial``, ``additions`` (same major
    schema: minor + 1) or ``schema`` (another major schema: major + 1, minor 0)."""
    if current is None:
        return Version(1, 0), "initial"
    if _major(current_schema) != _major(schema):
        return Version(current.major + 1, 0), "schema"
    return Version(current.major, current.minor + 1), "additions"
