"""The software authenticates itself (R6): a SHA-256 manifest of the installed package.

The build records the SHA-256 of every file of the installed ``jackpot`` package in
``jackpot/SOFTWARE.sha256`` (``jackpot manifest``: run by ``make setup`` after the protobuf code is
generated, and by the Dockerfile after the wheel is installed). At start every service verifies
its files against it (:func:`jackpot.platform.runtime.run_service`) and refuses to start when a
file differs, is missing or was added; the digest of the manifest it verified names the software
that runs: logged as ``software_verified``, the metric ``jackpot_software_info{digest}``, and
the first entry each audit writer appends to its chain (action ``software_verified``).
``jackpot verify`` checks an installation by hand.

Compiled caches (``__pycache__``) are not part of the software: Python rebuilds them from the
sources it verifies. The manifest lists itself out.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_NAME = "SOFTWARE.sha256"
SKIPPED_DIRS = {"__pycache__"}
_verified: list[str] = []  # the digest this process verified at start (the runtime sets it)


def remember_verified(digest: str) -> None:
    _verified[:] = [digest]


def verified_digest() -> str:
    """The manifest digest this process verified at start, or "" (tools, tests)."""
    return _verified[0] if _verified else ""


def package_root() -> Path:
    """The directory of the installed ``jackpot`` package (site-packages, or the editable tree)."""
    import jackpot

    return Path(jackpot.__file__).resolve().parent


def _files(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and not SKIPPED_DIRS.intersection(path.relative_to(root).parts)
        and path.relative_to(root).as_posix() != MANIFEST_NAME
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_text(root: Path) -> str:
    """``<sha256>  <path>`` per file, sorted (the format of ``sha256sum``)."""
    return "".join(f"{_sha256(p)}  {p.relative_to(root).as_posix()}\n" for p in _files(root))


def write_manifest(root: Path) -> str:
    """Record the manifest of ``root``; its digest."""
    text = manifest_text(root)
    (root / MANIFEST_NAME).write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()


def record_for_working_tree() -> bool:
    """In a development checkout (an editable install), record the manifest of the tree as it
    is now, as `make setup` does; an installed package (site-packages, the image) is never
    touched. Used by `jackpot demo` and the test session, which start services from the tree."""
    root = package_root()
    if any(part in ("site-packages", "dist-packages") for part in root.parts):
        return False
    write_manifest(root)
    return True


@dataclass
class Verification:
    root: Path
    digest: str = ""
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not (self.error or self.changed or self.missing or self.added)

    def describe(self) -> str:
        """One line: what was verified, or everything that is wrong."""
        if self.ok:
            return f"software verified: {self.root} matches manifest sha256:{self.digest}"
        if self.error:
            return f"software not verified: {self.error}"
        parts = [
            f"{kind} {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"
            for kind, names in (
                ("changed", self.changed),
                ("missing", self.missing),
                ("added", self.added),
            )
            if names
        ]
        return f"software not verified: {self.root} differs from its manifest: {'; '.join(parts)}"


def verify(root: Path) -> Verification:
    """Every file of ``root`` against its recorded manifest."""
    result = Verification(root)
    try:
        text = (root / MANIFEST_NAME).read_text(encoding="utf-8")
    except OSError as error:
        result.error = (
            f"no manifest {root / MANIFEST_NAME} ({error.strerror}); run `jackpot manifest`"
        )
        return result
    result.digest = hashlib.sha256(text.encode()).hexdigest()
    recorded: dict[str, str] = {}
    for line in text.splitlines():
        sha, _, name = line.partition("  ")
        recorded[name] = sha
    present = {p.relative_to(root).as_posix(): p for p in _files(root)}
    result.missing = sorted(set(recorded) - set(present))
    result.added = sorted(set(present) - set(recorded))
    result.changed = sorted(
        name for name in set(recorded) & set(present) if _sha256(present[name]) != recorded[name]
    )
    return result


def run_manifest(argv: list[str]) -> int:
    """``jackpot manifest [ROOT]``: record the manifest (the build does this)."""
    root = Path(argv[0]) if argv else package_root()
    print(f"manifest of {root}: sha256:{write_manifest(root)}")
    return 0


def run_verify(argv: list[str]) -> int:
    """``jackpot verify [ROOT]``: exit 0 when the installation matches its manifest, 1 if not."""
    result = verify(Path(argv[0]) if argv else package_root())
    print(result.describe(), file=sys.stdout if result.ok else sys.stderr)
    return 0 if result.ok else 1
