"""Documentation coverage and the docs' own examples (CPU, a few seconds).

As rlax does, every public name must carry its documentation where a user reads it: each name
in ``rltriton.__all__`` has a docstring with its shapes (``[*B, T]`` notation), its recursion
(an equation that refers to the neighbouring step, ``X_{t+1}`` or ``X_{t-1}``) and a runnable
example (``>>>``), and appears in the API reference pages (``docs/api/*.md``) as a
``::: rltriton.<name>`` directive. The examples in the docstrings and the ``pycon`` blocks of
the docs pages are run as doctests, so every printed output on the site is checked.

Docstrings that do not meet a requirement yet are listed in ``KNOWN_GAPS``: those cases are
strict xfails, so fixing a docstring turns its case into a failure until it is removed from
the list. Do not add to the list to make a new name pass: document the name.
"""

from __future__ import annotations

import doctest
import inspect
import re
from pathlib import Path

import pytest
import torch

import rltriton as rt

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
API_PAGES = sorted((DOCS / "api").glob("*.md"))
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_ext" not in p.parts)

SHAPES = re.compile(r"\[\*B[,\]]")
RECURSION = re.compile(r"^.*=.*_\{t\s*[+-]\s*1\}", re.MULTILINE)
REQUIREMENTS = {
    "shapes": lambda doc: SHAPES.search(doc) is not None,
    "recursion": lambda doc: RECURSION.search(doc) is not None,
    "example": lambda doc: ">>>" in doc,
}

# Docstrings found lacking when this test was written (reported; to be fixed in rltriton/).
KNOWN_GAPS: dict[str, set[str]] = {
}

# Modules documented in the API reference beyond rltriton.__all__.
EXTRA_MODULES = ("rltriton.reference", "rltriton.adapters", "rltriton.adapters.tensordict",
                 "rltriton.adapters.torchrl", "rltriton.adapters.cleanrl")


def _doc(name: str) -> str:
    return inspect.getdoc(getattr(rt, name)) or ""


def _cases():
    for name in rt.__all__:
        for req in REQUIREMENTS:
            marks = ()
            if req in KNOWN_GAPS.get(name, ()):
                marks = pytest.mark.xfail(strict=True, reason=f"docstring of rt.{name} has no {req} yet")
            yield pytest.param(name, req, id=f"{name}-{req}", marks=marks)


@pytest.mark.parametrize("name,requirement", list(_cases()))
def test_public_docstring(name: str, requirement: str) -> None:
    doc = _doc(name)
    assert doc, f"rt.{name} has no docstring"
    assert REQUIREMENTS[requirement](doc), f"the docstring of rt.{name} has no {requirement}"


def test_known_gaps_name_public_names() -> None:
    assert set(KNOWN_GAPS) <= set(rt.__all__)
    assert all(reqs <= set(REQUIREMENTS) for reqs in KNOWN_GAPS.values())


def _directives() -> set[str]:
    found = set()
    for page in API_PAGES:
        found |= set(re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.MULTILINE))
    return found


@pytest.mark.parametrize("name", rt.__all__)
def test_public_name_in_api_reference(name: str) -> None:
    assert f"rltriton.{name}" in _directives(), f"rt.{name} is missing from the API reference (docs/api/*.md)"


@pytest.mark.parametrize("module", EXTRA_MODULES)
def test_module_in_api_reference(module: str) -> None:
    assert module in _directives(), f"{module} is missing from the API reference (docs/api/*.md)"


def test_every_page_in_nav() -> None:
    nav = re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.MULTILINE)
    pages = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert set(nav) == pages, f"not in the nav: {pages - set(nav)}; nav entries without a page: {set(nav) - pages}"


def _run_doctest(test: doctest.DocTest) -> None:
    torch.set_printoptions(profile="default")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


@pytest.mark.parametrize("name", rt.__all__)
def test_docstring_examples_run(name: str) -> None:
    tests = doctest.DocTestFinder(recurse=False).find(getattr(rt, name), f"rt.{name}", globs={})
    for test in tests:
        if test.examples:
            _run_doctest(test)


_PYCON = re.compile(r"^```pycon\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_examples(page: Path) -> None:
    """The ``pycon`` blocks of a page, in order, in one namespace (a page reads as one session)."""
    blocks = _PYCON.findall(page.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip("no pycon examples")
    text = "\n".join(blocks)
    test = doctest.DocTestParser().get_doctest(text, {}, page.name, str(page), 0)
    _run_doctest(test)
