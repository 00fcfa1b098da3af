"""Griffe extension used by the docs build (mkdocs.yml loads it; it is not part of the package).

Two jobs, both at documentation time only:

1. ``adapters/`` is installed as ``rltriton.adapters`` (a ``package-dir`` mapping in
   pyproject.toml), which Griffe's static finder cannot see: it looks for
   ``rltriton/adapters/``. When the ``rltriton`` package has been loaded, the ``adapters``
   folder is loaded too and attached as its ``adapters`` member, so that
   ``::: rltriton.adapters.torchrl`` works without importing torchrl.

2. The docstrings are written in the reStructuredText flavour that ``help()`` reads well
   (``Example::`` literal blocks, ``:class:`` roles, underlined section titles, one simple
   table). Before mkdocstrings renders them they are turned into the Markdown equivalent:
   literal blocks become fenced code, roles become optional cross-references (plain code
   when the target is not on any page), underlined titles become bold lines, and simple
   tables become pipe tables. Citations of the project's SPEC.md (which is not shipped) become
   links to the page that documents the same rules. The source docstrings are not changed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# Python package -> folder (relative to the repository root), as in [tool.setuptools.package-dir].
PACKAGE_DIRS = {"rltriton.adapters": "adapters"}

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const):`(~?)([^`<>]+?)`")
_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")
_TABLE_BORDER = re.compile(r"^\s*=+(?: +=+)+\s*$")
# The docstrings cite the project's specification (SPEC.md, not shipped with the package) by
# section; on the site they link to the page that documents the same thing.
_SPEC = re.compile(r"SPEC\.md(?: section (\d))?")
_SPEC_TARGETS = {
    "1": ("the recurrence", "one-recurrence-seven-estimators"),
    "2": ("the boundary rules", "the-next-state-value"),
    "3": ("the estimators' recursions", "one-recurrence-seven-estimators"),
    "4": ("the public API", "rltriton-functions"),
    None: ("the boundary rules", "the-next-state-value"),
}
_ARGS_HEADER = re.compile(r"^(\s*)(?:Args|Arguments|Parameters|Params|Keyword Args|Other Parameters):\s*$")
_MULTI_ARG = re.compile(r"^(\s*)(\w+(?:\s*,\s*\w+)+)\s*:(.*)$")


class RltritonDocs(griffe.Extension):
    """Attach package-dir mapped subpackages and convert reST docstrings to Markdown."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for dotted, folder in PACKAGE_DIRS.items():
            parent_path, _, name = dotted.rpartition(".")
            if parent_path != pkg.path or name in pkg.members:
                continue
            sub = loader.load(folder, submodules=True, try_relative_path=False)
            pkg.set_member(name, sub)
        if pkg.path in {p.split(".")[0] for p in PACKAGE_DIRS} or pkg.path == "rltriton":
            _convert_tree(pkg, set())


def _convert_tree(obj: griffe.Object, seen: set[int]) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if obj.docstring is not None:
        obj.docstring.value = rst_to_markdown(obj.docstring.value, obj)
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_module or member.is_class or member.is_function or member.is_attribute:
            _convert_tree(member, seen)  # type: ignore[arg-type]


def _resolve(name: str, obj: griffe.Object) -> str:
    """The identifier an autoref should use for a role's target (best effort)."""
    candidates = [name]
    scope: griffe.Object | None = obj if (obj.is_module or obj.is_class) else obj.parent
    while scope is not None:
        candidates.append(f"{scope.path}.{name}")
        scope = scope.parent
    collection = obj.modules_collection
    for cand in candidates:
        try:
            collection.get_member(cand)
        except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        return cand
    return name


def _roles(text: str, obj: griffe.Object) -> str:
    def repl(m: re.Match[str]) -> str:
        tilde, target = m.group(1), m.group(2).strip()
        shown = target.rsplit(".", 1)[-1] if tilde else target
        ident = _resolve(target, obj)
        # `optional`: no warning (and plain text) when the target is rendered on no page
        return f'<autoref identifier="{ident}" optional><code>{shown}</code></autoref>'

    return _ROLE.sub(repl, text)


def _spec_links(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        title, anchor = _SPEC_TARGETS.get(m.group(1), _SPEC_TARGETS[None])
        return f'<autoref identifier="{anchor}" optional>{title}</autoref>'

    return _SPEC.sub(repl, text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _table(lines: list[str]) -> list[str] | None:
    """A reST simple table (three ``====`` borders) as a Markdown pipe table."""
    borders = [i for i, ln in enumerate(lines) if _TABLE_BORDER.match(ln)]
    if len(borders) != 3 or borders[0] != 0 or borders[2] != len(lines) - 1:
        return None
    starts = [m.start() for m in re.finditer(r"=+", lines[0])]

    def cells(ln: str) -> list[str]:
        out = []
        for k, s in enumerate(starts):
            e = starts[k + 1] if k + 1 < len(starts) else len(ln)
            out.append(ln[s:e].strip().replace("|", "\\|"))
        return out

    head = cells(lines[1])
    rows = [cells(ln) for ln in lines[borders[1] + 1 : borders[2]] if ln.strip()]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    return md


def _split_multi_args(lines: list[str]) -> list[str]:
    """``a, b: text`` in a Google ``Args:`` section becomes one entry per name."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        header = _ARGS_HEADER.match(lines[i])
        i += 1
        if not header:
            continue
        base = len(header.group(1))
        item_indent = None
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
            line = lines[i]
            if item_indent is None and line.strip():
                item_indent = _indent(line)
            m = _MULTI_ARG.match(line)
            if m and _indent(line) == item_indent:
                j = i + 1
                while j < len(lines) and lines[j].strip() and _indent(lines[j]) > item_indent:
                    j += 1
                for name in m.group(2).split(","):
                    out.append(f"{m.group(1)}{name.strip()}:{m.group(3)}")
                    out += lines[i + 1 : j]
                i = j
                continue
            out.append(line)
            i += 1
    return out


def rst_to_markdown(text: str, obj: griffe.Object | None = None) -> str:
    lines = _split_multi_args(text.splitlines())
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        # simple tables
        if _TABLE_BORDER.match(line):
            j = i + 1
            n_borders = 1
            while j < len(lines) and n_borders < 3:
                if _TABLE_BORDER.match(lines[j]):
                    n_borders += 1
                j += 1
            table = _table(lines[i:j]) if n_borders == 3 else None
            if table is not None:
                if out and out[-1].strip():
                    out.append("")
                out += table
                i = j
                continue
        # underlined section titles
        if (
            stripped
            and i + 1 < len(lines)
            and _UNDERLINE.match(lines[i + 1])
            and len(lines[i + 1].strip()) >= len(stripped)
            and not _TABLE_BORDER.match(line)
        ):
            out.append(" " * _indent(line) + f"**{stripped}**")
            out.append("")
            i += 2
            continue
        # literal blocks introduced by "::"
        if stripped.endswith("::"):
            base = _indent(line)
            head = line.rstrip()[:-2].rstrip()
            if head.strip():
                out.append(head + ("" if head.endswith(":") else ":"))
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block_start = j
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                j += 1
            block = lines[block_start:j]
            while block and not block[-1].strip():
                block.pop()
            if block:
                cut = min(_indent(b) for b in block if b.strip())
                lang = "pycon" if block[0].strip().startswith(">>>") else "text"
                pad = " " * base
                out.append("")
                out.append(f"{pad}```{lang}")
                out += [pad + b[cut:] if b.strip() else "" for b in block]
                out.append(f"{pad}```")
                out.append("")
                i = j
                continue
            i += 1
            continue
        out.append(line)
        i += 1
    result = "\n".join(out)
    if obj is not None:
        result = _roles(result, obj)
    return _spec_links(result)
