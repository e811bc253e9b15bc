"""The validation's own packages are installed (PyYAML, jsonschema, kubernetes-validate)."""

from __future__ import annotations

from tests.deploy.conftest import MISSING


def test_validation_packages_are_installed() -> None:
    assert not MISSING, (
        f"missing {MISSING}: `make setup` installs them from pyproject.toml's dev extras "
        "(pinned in requirements.lock)"
    )
