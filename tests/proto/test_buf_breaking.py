"""``make proto-breaking`` (proto-tools/buf-breaking.sh) refuses an incompatible change to protos/.

Each test copies protos/ and buf.yaml into a scratch git repository, commits them on ``main``
and changes them there: a field's type changed or a field deleted must fail, whether it is about
to be committed (the working tree against HEAD) or has landed (HEAD against HEAD~1, or a branch
against its merge-base with main); a new message or field must pass. Where there is nothing to
compare against (the first commit, a shallow clone, an unknown ref, no git at all) the check says
so and passes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "proto-tools" / "buf-breaking.sh"
BUF = REPO / "proto-tools" / "node_modules" / ".bin" / "buf"
AUDIT = Path("protos/jackpot/v1/audit.proto")
# A scalar field of a message, at two spaces' indent: "  int64 time_ns = 3;"
FIELD = re.compile(r"^  (int64|uint64|int32|uint32|string|bool|bytes) (\w+) = (\d+);\n", re.M)
OTHER_TYPE = {"string": "int64"}  # every other scalar type becomes a string


GIT_CONFIG = ("user.name=scratch", "user.email=scratch@example.invalid", "commit.gpgsign=false")


def git(repo: Path, *args: str) -> str:
    options = [arg for setting in GIT_CONFIG for arg in ("-c", setting)]
    done = subprocess.run(
        ["git", *options, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"git {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def breaking(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the check as `make proto-breaking` does, in cwd."""
    if not os.access(BUF, os.X_OK):
        pytest.fail(f"buf is missing at {BUF}: `make setup` installs it (proto-tools/package.json)")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROTO_")}
    environ |= {"BUF": str(BUF), "GIT_CEILING_DIRECTORIES": str(cwd.parent), **env}
    return subprocess.run(
        [str(SCRIPT)], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120
    )


def output(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A git repository on main whose one commit holds a copy of protos/ and buf.yaml."""
    repo = tmp_path / "scratch"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copytree(REPO / "protos", repo / "protos")
    shutil.copy(REPO / "buf.yaml", repo / "buf.yaml")
    commit_all(repo, "the contracts")
    return repo


def second_commit(repo: Path) -> None:
    """A compatible commit, so that HEAD~1 exists."""
    add_message(repo, "ScratchFirst")
    commit_all(repo, "a compatible addition")


def first_field(repo: Path) -> re.Match[str]:
    found = FIELD.search((repo / AUDIT).read_text(encoding="utf-8"))
    assert found, f"no scalar field to change in {AUDIT}"
    return found


def change_a_field_type(repo: Path) -> str:
    """AuditRecord's first scalar field gets another type; returns the field's name."""
    field = first_field(repo)
    kind, name, number = field.groups()
    text = (repo / AUDIT).read_text(encoding="utf-8")
    changed = f"  {OTHER_TYPE.get(kind, 'string')} {name} = {number};\n"
    (repo / AUDIT).write_text(text.replace(field.group(0), changed, 1), encoding="utf-8")
    return name


def delete_a_field(repo: Path) -> str:
    field = first_field(repo)
    text = (repo / AUDIT).read_text(encoding="utf-8")
    (repo / AUDIT).write_text(text.replace(field.group(0), "", 1), encoding="utf-8")
    return field.group(2)


def add_message(repo: Path, name: str) -> None:
    path = repo / AUDIT
    text = path.read_text(encoding="utf-8")
    path.write_text(f"{text}\n// Scratch.\nmessage {name} {{\n  string note = 1;\n}}\n", "utf-8")


def add_field(repo: Path) -> None:
    """A new field at the end of the file's first message, with a number it does not use."""
    path = repo / AUDIT
    text = path.read_text(encoding="utf-8")
    message = re.search(r"^message \w+ \{\n(.*?)^\}", text, re.M | re.S)
    assert message, f"no message in {AUDIT}"
    body = message.group(1)
    used = [int(n) for n in re.findall(r"= (\d+)", body)]
    for line in re.findall(r"^\s*reserved (.*);", body, re.M):
        used += [int(n) for n in re.findall(r"\d+", line)]
    added = f"  // Scratch.\n  string scratch_note = {max(used) + 1};\n"
    path.write_text(text[: message.end(1)] + added + text[message.end(1) :], encoding="utf-8")


def assert_refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode != 0, output(done)
    assert "FAILED" in done.stderr, output(done)
    for word in words:
        assert word in output(done), output(done)


def assert_passed(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 0, output(done)
    assert "FAILED" not in output(done), output(done)
    for word in words:
        assert word in output(done), output(done)


def test_lint_runs_the_check() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^lint:.*\bproto-breaking\b", makefile, re.M), "lint needs proto-breaking"
    recipe = re.search(r"^proto-breaking:.*\n\t(.*)$", makefile, re.M)
    assert recipe, "no proto-breaking target"
    assert "proto-tools/buf-breaking.sh" in recipe.group(1)


def test_the_first_commit_has_nothing_to_compare_and_says_so(scratch: Path) -> None:
    assert_passed(breaking(scratch), "skipped", "HEAD~1")


def test_an_uncommitted_type_change_is_refused(scratch: Path) -> None:
    name = change_a_field_type(scratch)
    assert_refused(breaking(scratch), f'name "{name}"', "changed type", "uncommitted")


def test_an_uncommitted_type_change_is_refused_on_the_first_commit_too(scratch: Path) -> None:
    """No HEAD~1 to compare with, but HEAD is there."""
    change_a_field_type(scratch)
    assert_refused(breaking(scratch), "changed type", "skipped")


def test_a_committed_field_deletion_is_refused(scratch: Path) -> None:
    second_commit(scratch)
    name = delete_a_field(scratch)
    commit_all(scratch, "delete a field")
    assert_refused(breaking(scratch), f'"{name}"', "the previous commit")


def test_a_committed_type_change_is_refused(scratch: Path) -> None:
    second_commit(scratch)
    change_a_field_type(scratch)
    commit_all(scratch, "change a type")
    assert_refused(breaking(scratch), "changed type", "the previous commit")


def test_compatible_additions_pass_uncommitted_and_committed(scratch: Path) -> None:
    second_commit(scratch)
    add_field(scratch)
    add_message(scratch, "ScratchAdded")
    assert_passed(breaking(scratch), "ok: the working tree against HEAD", "previous commit")
    commit_all(scratch, "a new field and a new message")
    assert_passed(breaking(scratch), "ok: the working tree against the previous commit")


def test_a_branch_is_checked_against_its_merge_base_with_main(scratch: Path) -> None:
    """The break is two commits back on the branch: HEAD~1 alone would not see it."""
    second_commit(scratch)
    git(scratch, "switch", "-q", "-c", "feature")
    change_a_field_type(scratch)
    commit_all(scratch, "change a type")
    add_message(scratch, "ScratchLater")
    commit_all(scratch, "a later, compatible commit")
    assert_passed(breaking(scratch, PROTO_AGAINST="HEAD~1"), "PROTO_AGAINST")
    assert_refused(breaking(scratch), "changed type", "the merge-base with main")


def test_a_deliberate_break_passes_with_buf_yaml_ignore_only(scratch: Path) -> None:
    second_commit(scratch)
    change_a_field_type(scratch)
    config = (scratch / "buf.yaml").read_text(encoding="utf-8")
    assert "\nbreaking:\n  use:\n    - FILE\n" in config, config
    config += f"  ignore_only:\n    FIELD_SAME_TYPE:\n      - {AUDIT.as_posix()}\n"
    (scratch / "buf.yaml").write_text(config, encoding="utf-8")
    commit_all(scratch, "a deliberate, declared break")
    assert_passed(breaking(scratch), "ok: the working tree against the previous commit")


def test_a_shallow_clone_skips_with_a_message(scratch: Path, tmp_path: Path) -> None:
    second_commit(scratch)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{scratch}", str(clone))
    assert_passed(breaking(clone), "skipped", "shallow")


def test_an_unknown_ref_skips_with_a_message(scratch: Path) -> None:
    second_commit(scratch)
    assert_passed(breaking(scratch, PROTO_AGAINST="no-such-ref"), "skipped", "no-such-ref")


def test_outside_git_it_skips_with_a_message(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(REPO / "protos", plain / "protos")
    assert_passed(breaking(plain), "skipped", "not a git work tree")
