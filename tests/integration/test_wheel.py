"""The wheel, the image and the code agree (issue 25): the wheel is built from what the Dockerfile
copies into its build stage and nothing else, holds the ``jackpot`` package only (``loadtest/`` is
test tooling), declares every third-party package its modules import, and works on its own:
installed into a fresh virtualenv with the source tree off ``sys.path``, ``jackpot demo --help``
answers and the demo and its floor simulator import (``jackpot.sim`` is part of the product).

No network: the wheel is built without build isolation from the setuptools of the project's
venv, and the fresh virtualenv reaches the runtime dependencies through a ``.pth`` line naming the
project venv's site-packages (whose editable ``jackpot`` finder is not run from there).
About 4 s, hence the integration tier; no broker needed.
"""

from __future__ import annotations

import email
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.unit.test_import_boundary import imported_modules

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PIP = [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check"]
DIST_INFO = "jackpot-0.1.0.dist-info"
# What .dockerignore keeps out of the build context, of the folders the Dockerfile copies.
# (It keeps out services/jackpot/v1/ too: the build stage generates it with protoc; here the
# working tree's generated code, from `make proto`, stands in for that step.)
CONTEXT_IGNORED = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info", "SOFTWARE.*")


def dockerfile_build_copies(dockerfile: Path = REPO / "Dockerfile") -> list[str]:
    """The sources the Dockerfile's build stage copies from the context (``COPY a b dest``)."""
    sources: list[str] = []
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources.extend(w.rstrip("/") for w in words[1:-1] if not w.startswith("--"))
    return sources


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _name(requirement: str) -> str:
    """The distribution a requirement line names (``grpcio<2,>=1.85; ...``: grpcio)."""
    return _normalized(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0])


def installed_with(required: set[str]) -> set[str]:
    """The distributions pip installs for ``required``: they and, transitively, what they require
    (extras left out; other markers taken as true: an over-estimate at worst)."""
    found: set[str] = set()
    pending = list(required)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        pending.extend(_name(r) for r in requirements if "extra ==" not in r)
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project wheel, built from a copy of the Dockerfile's build context."""
    context = tmp_path_factory.mktemp("context")
    for source in dockerfile_build_copies():
        origin = REPO / source
        if origin.is_dir():
            shutil.copytree(origin, context / source, ignore=CONTEXT_IGNORED)
        else:
            shutil.copy2(origin, context / source)
    dist = tmp_path_factory.mktemp("dist")
    build = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist)]
    subprocess.run([*PIP, *build, str(context)], check=True, timeout=120)
    (built,) = dist.glob("jackpot-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv (no pip in it) with the wheel installed, its dependencies reached
    through the project venv's site-packages; its ``bin`` folder."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = ["--python", str(python), "install", "--no-deps", "--no-index", str(wheel)]
    subprocess.run([*PIP, *install], check=True, timeout=120)
    site = subprocess.run(
        [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(site, "project-venv.pth").write_text("".join(f"{path}\n" for path in sorted(ours)))
    return venv / "bin"


def run_outside(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd``, away from the source tree, without PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_the_dockerfile_copies_what_the_wheel_is_built_from() -> None:
    """The parse of the Dockerfile is not vacuous, and the image gets no test tooling."""
    copies = dockerfile_build_copies()
    assert {"pyproject.toml", "README.md", "services", "requirements.lock"} <= set(copies)
    assert not {"loadtest", "tests", "."} & set(copies)


def test_the_wheel_holds_the_jackpot_package_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        top_level = archive.read(f"{DIST_INFO}/top_level.txt").decode().split()
    assert {name.split("/")[0] for name in names} == {"jackpot", DIST_INFO}
    assert top_level == ["jackpot"]
    assert not [n for n in names if n.startswith(("loadtest/", "tests/"))]
    # every module of the source package is in it: no subpackage left out by the discovery
    source = {
        path.relative_to(REPO / "services").as_posix()
        for path in (REPO / "services" / "jackpot").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert source - names == set()
    assert {"jackpot/sim/floor.py", "jackpot/clients/payout.py", "jackpot/tools/demo.py"} <= names
    assert {"jackpot/terminal/static/terminal.html", "jackpot/display/static/sign.html"} <= names


def test_the_wheel_requires_every_package_its_modules_import(wheel: Path) -> None:
    """Each third-party module a module of the wheel imports comes from a distribution the wheel
    requires (not a dev extra) or one of theirs: the image installs those only."""
    imported: dict[str, set[str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        metadata = email.message_from_bytes(archive.read(f"{DIST_INFO}/METADATA"))
        for name in archive.namelist():
            if name.endswith(".py"):
                module = name.removesuffix(".py").replace("/", ".")
                package = module.removesuffix(".__init__")
                if package == module:
                    package = module.rsplit(".", 1)[0]
                for imported_name in imported_modules(archive.read(name).decode(), package):
                    imported.setdefault(imported_name.split(".")[0], set()).add(module)
    required = {
        _name(requirement)
        for requirement in metadata.get_all("Requires-Dist") or []
        if "extra ==" not in requirement
    }
    assert "hdrhistogram" in required  # the floor simulator's latency budget (jackpot.sim.hops)
    assert "pytest" not in installed_with(required)
    required = installed_with(required)
    providers = importlib.metadata.packages_distributions()
    third_party = set(imported) - set(sys.stdlib_module_names) - {"jackpot", "__import__"}
    assert {"grpc", "aiokafka", "hdrh"} <= third_party
    undeclared = {
        top: sorted(imported[top])[:3]
        for top in sorted(third_party)
        if not {_normalized(d) for d in providers.get(top, [])} & required
    }
    assert undeclared == {}, f"imported but not required by the wheel: {undeclared}"


@pytest.mark.parametrize("command", [[], ["demo"], ["verify"]], ids=" ".join)
def test_jackpot_demo_answers_help_from_the_wheel(
    command: list[str], installed: Path, tmp_path: Path
) -> None:
    result = run_outside([str(installed / "jackpot"), *command, "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(" ".join(["usage: jackpot", *command])), result.stdout


def test_the_demo_and_its_floor_import_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    """Isolated mode (no PYTHONPATH, no working directory on sys.path): jackpot is the wheel's,
    the demo and the floor simulator import, and loadtest is nowhere."""
    probe = (
        "import importlib.util, jackpot, jackpot.tools.demo, jackpot.sim.floor, jackpot.sim.books\n"
        "print(jackpot.__file__)\n"
        "print(importlib.util.find_spec('loadtest'))\n"
    )
    result = run_outside([str(installed / "python"), "-I", "-c", probe], tmp_path)
    assert result.returncode == 0, result.stderr
    location, loadtest = result.stdout.splitlines()
    assert Path(location).is_relative_to(installed.parent), location
    assert not Path(location).is_relative_to(REPO), location
    assert loadtest == "None"


def test_the_installed_wheel_records_and_verifies_its_manifest(
    installed: Path, tmp_path: Path
) -> None:
    """As the Dockerfile does after installing the wheel (R6): `jackpot manifest`, then the
    check every service makes at start (`jackpot verify`) passes."""
    recorded = run_outside([str(installed / "jackpot"), "manifest"], tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    verified = run_outside([str(installed / "jackpot"), "verify"], tmp_path)
    assert verified.returncode == 0, verified.stderr
