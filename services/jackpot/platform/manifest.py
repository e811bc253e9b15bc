"""The software authenticates itself (R6): a SHA-256 manifest of the installed package.

The build records the SHA-256 of every file of the installed ``jackpot`` package in
``jackpot/SOFTWARE.sha256`` (``jackpot manifest``: run by ``make setup`` after the protobuf code is
generated, and by the Dockerfile after the wheel is installed). At start every service verifies
its files against it (:func:`jackpot.platform.runtime.run_service`) and refuses to start when a
file differs, is missing or was added; the digest of the manifest it verified names the software
that runs: logged as ``software_verified``, the metric ``jackpot_software_info{digest}``, and
the first entry each audit writer appends to its chain (action ``software_verified``).
``jackpot verify`` checks an installation by hand.

The regulator's own digest: a manifest that travels beside the files proves only that they match
it. The setting ``JACKPOT_APPROVED_SOFTWARE_DIGEST`` holds the manifest digest the regulator
approved; a service whose manifest has another digest never starts, as one whose files differ
from it (``jackpot verify --expect DIGEST`` says the same by hand).

The field check (:func:`attest`): given an inspector's random seed, the HMAC-SHA-256 under that
seed of every installed file, the manifest included, read when asked. A service answers it on
its gRPC API (``jackpot.platform.grpc_edge``, the inspector role); the inspector computes the
same over the approved build (``jackpot verify --seed``). An answer copied from an earlier call
is worth nothing under a new seed.

Compiled caches (``__pycache__``) are not part of the software: Python rebuilds them from the
sources it verifies. The manifest lists itself out.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_NAME = "SOFTWARE.sha256"
SKIPPED_DIRS = {"__pycache__"}
MIN_SEED_BYTES, MAX_SEED_BYTES = 16, 64  # below 16 bytes a table of answers could be built
_DIGEST = re.compile(r"(?:sha256:)?([0-9a-fA-F]{64})")
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


def parse_digest(text: str) -> str:
    """A manifest digest as the regulator writes it (``sha256:<64 hex>`` or the 64 hex digits
    alone), in lower case; ValueError otherwise."""
    match = _DIGEST.fullmatch(text.strip())
    if match is None:
        raise ValueError("expected a SHA-256 digest: 64 hex digits, optionally after 'sha256:'")
    return match[1].lower()


def parse_seed(text: str) -> bytes:
    """An inspector's seed given in hex, 16 to 64 bytes; ValueError otherwise."""
    try:
        seed = bytes.fromhex(text.strip())
    except ValueError:
        raise ValueError("expected the seed in hex digits") from None
    check_seed(seed)
    return seed


def check_seed(seed: bytes) -> None:
    if not MIN_SEED_BYTES <= len(seed) <= MAX_SEED_BYTES:
        raise ValueError(
            f"the seed must be {MIN_SEED_BYTES} to {MAX_SEED_BYTES} bytes, got {len(seed)}"
        )


@dataclass(frozen=True, slots=True)
class Attestation:
    """The answer to an inspector's seed: the HMAC and how many files it covers."""

    hmac_sha256: str
    files: int


def attest(root: Path, seed: bytes) -> Attestation:
    """R6: HMAC-SHA-256 keyed by ``seed`` over every file of ``root`` (the manifest included,
    ``__pycache__`` left out), in the order of their relative paths: for each, the path (UTF-8,
    "/" separators), NUL, its size in decimal, NUL, its bytes. The size makes the boundary
    between one file and the next unambiguous."""
    check_seed(seed)
    mac = hmac.new(seed, digestmod=hashlib.sha256)
    files = [p for p in root.rglob("*") if p.is_file() and not _skipped(root, p)]
    named = sorted((p.relative_to(root).as_posix().encode(), p) for p in files)
    for name, path in named:
        data = path.read_bytes()
        mac.update(name + b"\0" + str(len(data)).encode() + b"\0")
        mac.update(data)
    return Attestation(mac.hexdigest(), len(named))


def _skipped(root: Path, path: Path) -> bool:
    return bool(SKIPPED_DIRS.intersection(path.relative_to(root).parts))


@dataclass
class Verification:
    root: Path
    digest: str = ""
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    error: str = ""
    approved: str = ""  # the digest the regulator approved, when one is set

    @property
    def unapproved(self) -> bool:
        """Whether a digest was approved and the manifest's is another."""
        return bool(self.approved) and self.digest != self.approved

    @property
    def ok(self) -> bool:
        return not (self.error or self.changed or self.missing or self.added or self.unapproved)

    def describe(self) -> str:
        """One line: what was verified, or everything that is wrong."""
        if self.ok:
            approved = " (the approved digest)" if self.approved else ""
            return f"software verified: {self.root} matches manifest sha256:{self.digest}{approved}"
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
        wrong = [f"differs from its manifest: {'; '.join(parts)}"] if parts else []
        if self.unapproved:
            wrong.append(
                f"its manifest is sha256:{self.digest}, not the approved sha256:{self.approved}"
            )
        return f"software not verified: {self.root} {'; '.join(wrong)}"


def verify(root: Path, approved: str = "") -> Verification:
    """Every file of ``root`` against its recorded manifest, and the manifest's digest against
    ``approved`` (a :func:`parse_digest` digest) when one is given."""
    result = Verification(root, approved=approved)
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
