"""The Debian mirror `make image` debootstraps its base from (issue 25): the machine's apt
sources, not a hard-coded host (``deploy/image/image.sh mirror``).

Each case writes a folder of apt sources of its own and points ``JACKPOT_APT_DIR`` at it: the
one-line format (``sources.list``, ``sources.list.d/*.list``) and deb822 (``*.sources``), in
apt's order; security, updates, source-only, disabled and third-party entries are never the
mirror; ``JACKPOT_DEBIAN_MIRROR`` overrides; none found is an error that names what was read.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IMAGE_SH = REPO / "deploy" / "image" / "image.sh"

DEBIAN_SOURCES = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
NODESOURCE_SOURCES = """\
Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
Architectures: amd64
"""


def mirror(
    apt: Path, files: dict[str, str], override: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``image.sh mirror`` with these apt source files (paths relative to ``apt``)."""
    (apt / "sources.list.d").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (apt / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "JACKPOT_DEBIAN_MIRROR"}
    env["JACKPOT_APT_DIR"] = str(apt)
    if override is not None:
        env["JACKPOT_DEBIAN_MIRROR"] = override
    return subprocess.run(
        ["bash", str(IMAGE_SH), "mirror"], env=env, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # this machine's layout: deb822 only, the security stanza after the main one
        ({"sources.list.d/debian.sources": DEBIAN_SOURCES}, "http://deb.debian.org/debian"),
        # a third-party deb822 file sorting first, a disabled third-party one-line file
        (
            {
                "sources.list.d/a-nodesource.sources": NODESOURCE_SOURCES,
                "sources.list.d/debian.sources": DEBIAN_SOURCES,
                "sources.list.d/google.list.disabled-by-farm": "deb http://g/apt bookworm main\n",
            },
            "http://deb.debian.org/debian",
        ),
        # one-line: security first, options in brackets, a trailing comment, deb-src before
        (
            {
                "sources.list": (
                    "# the machine's mirrors\n"
                    "deb http://security.debian.org/debian-security bookworm-security main\n"
                    "deb-src http://src.example/debian bookworm main\n"
                    "deb [arch=amd64 signed-by=/usr/share/keyrings/d.gpg] "
                    "http://ftp.cl.debian.org/debian bookworm main contrib # Chile\n"
                )
            },
            "http://ftp.cl.debian.org/debian",
        ),
        # a third-party repository of suite bookworm without main (docker's) is not a mirror
        (
            {
                "sources.list.d/a-docker.list": "deb https://download.docker.com/linux/debian "
                "bookworm stable\n",
                "sources.list.d/b-debian.list": "deb https://mirror.example/debian bookworm main\n",
            },
            "https://mirror.example/debian",
        ),
        # deb822: a disabled stanza, a deb-src-only one, several URIs (the first), Types listing
        # both, field names in any case, a suite on a continuation line
        (
            {
                "sources.list.d/debian.sources": (
                    "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\n"
                    "Components: main\nEnabled: no\n\n"
                    "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n"
                    "Components: main\n\n"
                    "types: deb-src deb\nuris: http://one.example/debian http://two.example/d\n"
                    "suites: bookworm-updates\n bookworm\ncomponents: main\n"
                )
            },
            "http://one.example/debian",
        ),
        # bookworm itself before another Debian release, wherever it is
        (
            {
                "sources.list": "deb http://trixie.example/debian trixie main\n",
                "sources.list.d/bookworm.list": "deb http://bw.example/debian bookworm main\n",
            },
            "http://bw.example/debian",
        ),
        # another release when no bookworm entry exists (any Debian mirror serves bookworm)
        (
            {"sources.list": "deb http://deb.example/debian stable main\n"},
            "http://deb.example/debian",
        ),
        # apt's order among equals: sources.list, then sources.list.d/ by name, .list and .sources
        (
            {
                "sources.list.d/b.list": "deb http://b.example/debian bookworm main\n",
                "sources.list.d/a.sources": (
                    "Types: deb\nURIs: http://a.example/debian\nSuites: bookworm\n"
                    "Components: main\n"
                ),
            },
            "http://a.example/debian",
        ),
    ],
)
def test_the_mirror_comes_from_the_apt_sources(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    result = mirror(tmp_path, files)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{expected}\n"


def test_the_environment_overrides_the_apt_sources(tmp_path: Path) -> None:
    files = {"sources.list.d/debian.sources": DEBIAN_SOURCES}
    result = mirror(tmp_path, files, override="http://local.example/debian")
    assert (result.returncode, result.stdout) == (0, "http://local.example/debian\n")
    # and it needs no apt sources at all
    result = mirror(tmp_path / "empty", {}, override="http://local.example/debian")
    assert (result.returncode, result.stdout) == (0, "http://local.example/debian\n")


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({}, "none ("),  # no sources file at all
        (
            {  # Ubuntu's, security only, a third-party suite
                "sources.list": "deb http://archive.ubuntu.com/ubuntu jammy main\n",
                "sources.list.d/debian.sources": DEBIAN_SOURCES.split("\n\n")[1],
                "sources.list.d/nodesource.sources": NODESOURCE_SOURCES,
            },
            "sources.list.d/nodesource.sources",
        ),
    ],
)
def test_no_mirror_found_is_an_error_naming_what_was_read(
    tmp_path: Path, files: dict[str, str], named: str
) -> None:
    result = mirror(tmp_path, files)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "no Debian mirror in the apt sources read:" in result.stderr
    assert named in result.stderr
    assert "JACKPOT_DEBIAN_MIRROR=" in result.stderr
    assert "bookworm" in result.stderr


def test_the_machines_own_sources_give_a_mirror_or_say_why() -> None:
    """On this machine (its real /etc/apt): a URL, or the error and exit 1, never a blank."""
    env = {
        k: v for k, v in os.environ.items() if k not in {"JACKPOT_DEBIAN_MIRROR", "JACKPOT_APT_DIR"}
    }
    result = subprocess.run(
        ["bash", str(IMAGE_SH), "mirror"], env=env, capture_output=True, text=True, timeout=30
    )
    if result.returncode == 0:
        assert result.stdout.startswith(("http://", "https://", "file:")), result.stdout
    else:
        assert "no Debian mirror" in result.stderr
