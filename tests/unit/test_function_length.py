"""Every function of the product reads at once: at most 60 lines (issue 25).

Every ``.py`` file under ``services/jackpot`` is parsed with :mod:`ast` (never imported), and every
function in it, at any depth (methods, nested functions, ``async def``), is measured as
``end_lineno - lineno + 1``: from its ``def`` line to its last line, docstring and comments
included, decorators not. A function over the limit is split along its natural steps; the only
exceptions are the entries of ``ALLOWED``, each with its reason, which are kept short and current
(an entry whose function is gone or back under the limit fails too, so it is removed).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVICES = REPO / "services"
PACKAGE = SERVICES / "jackpot"
MAX_LINES = 60
# protoc's output (`make proto`), not written here; ruff excludes it too (pyproject.toml).
GENERATED = (PACKAGE / "v1",)
# "path under services/:qualified name" -> why it is still longer (ideally empty).
ALLOWED: dict[str, str] = {}
MAX_ALLOWED = 3


def long_functions(source: str, limit: int = MAX_LINES) -> dict[str, int]:
    """Qualified name (``Class.method``, ``outer.inner``) -> lines, of each function over limit."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > limit:
                    found[name] = lines
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def product_files(package: Path = PACKAGE) -> list[Path]:
    return [
        path
        for path in sorted(package.rglob("*.py"))
        if not any(path.is_relative_to(generated) for generated in GENERATED)
    ]


def measured(package: Path = PACKAGE) -> dict[str, int]:
    """Every function over the limit in ``package``, by ``path:qualified name`` (the path from
    the folder that holds the package)."""
    found: dict[str, int] = {}
    for path in product_files(package):
        relative = path.relative_to(package.parent).as_posix()
        for name, lines in long_functions(path.read_text(encoding="utf-8")).items():
            found[f"{relative}:{name}"] = lines
    return found


def refused(package: Path = PACKAGE) -> dict[str, int]:
    """The functions over the limit that ``ALLOWED`` does not name."""
    return {name: lines for name, lines in measured(package).items() if name not in ALLOWED}


def test_no_function_in_the_product_is_over_60_lines() -> None:
    assert len(product_files()) > 50  # the walk found the package
    over = refused()
    assert not over, (
        f"functions over {MAX_LINES} lines (split them along their steps): "
        + ", ".join(f"{name} ({lines})" for name, lines in sorted(over.items()))
    )


def test_the_allow_list_is_short_reasoned_and_current() -> None:
    assert len(ALLOWED) <= MAX_ALLOWED
    found = measured()
    for name, reason in ALLOWED.items():
        assert len(reason) > 20, f"{name}: say why it is allowed"
        assert name in found, f"{name} is gone or under {MAX_LINES} lines: remove it from ALLOWED"


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{n} = {n}\n" for n in range(body_lines))
    return f"{indent}def {name}() -> None:\n{body}"


def test_a_synthetic_long_function_is_refused() -> None:
    assert long_functions(_function("short", 59)) == {}  # 60 lines: at the limit
    assert long_functions(_function("long", 60)) == {"long": 61}
    nested = "class Floor:\n    async def run(self) -> None:\n" + _function("inner", 70, "        ")
    assert long_functions(nested) == {"Floor.run": 72, "Floor.run.inner": 71}
    decorated = "@decorator\n" + _function("decorated", 59)  # decorators do not count
    assert long_functions(decorated) == {}


def test_a_synthetic_long_function_in_a_package_is_refused(tmp_path: Path) -> None:
    """The walk the product is held to names a long function of a package, at any depth."""
    package = tmp_path / "jackpot"
    (package / "domain").mkdir(parents=True)
    money = (PACKAGE / "domain" / "money.py").read_text(encoding="utf-8")
    (package / "domain" / "money.py").write_text(money, encoding="utf-8")
    assert refused(package) == {}
    long = money + "\n\nclass Engine:\n" + _function("resolve_everything", 80, "    ")
    (package / "domain" / "engine.py").write_text(long, encoding="utf-8")
    assert refused(package) == {"jackpot/domain/engine.py:Engine.resolve_everything": 81}
