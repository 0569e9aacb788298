"""Provenance that lets code move: is the code a run executed still the code of the tree, modulo
renames?

:func:`~flbook.experiments.fingerprint.check_sources` compares a record's files with the files
of the same paths today, so moving a function to another module, renaming a module or moving a
whole package reads as a removal, and every result whose run imported that file goes stale. This
module judges the run's code by what it *is*, wherever it now lives:

1. **The run's code, as it was.** A record names its commit and the whole-file hash of every
   library file it imported; git gives those files back (:class:`OldTree`), checked against the
   hashes (a file that git does not give, or gives with another hash, leaves the record stale).
2. **What the run could execute.** :func:`~flbook.experiments.fingerprint.reachable_units` on
   that old code, from the run's entries (the command's ``__main__`` block, or a point's
   function): a unit the run could not reach may be removed or changed freely.
3. **Where each unit lives now.** The rename map (:mod:`.renames`: old module to new, and single
   units moved to another module) sends every reachable unit ``(module, name)`` to its new home,
   where the name is *resolved*: an import is followed to the definition it binds
   (:func:`resolve`), in the old tree and in the new one.
4. **The same code.** A reachable definition (function, class, assignment) must have the same
   syntax tree at its new home as in the run, docstrings and layout aside, with every import in
   it (top-level or inside a function), and every attribute of a library module bound at the top
   of its file (``awa.tune_weights``), replaced by the definition it resolves to
   (:func:`canonical_digest`): ``from .federation import ClientData`` and ``from flprivacy.clients
   import ClientData`` are the same code when the map moved ``ClientData`` to ``flprivacy.clients``.
   Every global name the unit looks up must resolve, in its new module, to the image of what it
   resolved to in the run (a moved function still calls the same helper), and a name that was a
   builtin must not have become a global.
5. **Nothing new runs at import.** Every module the new code imports (the images of the run's
   files, the modules their imports name, and the packages above them) holds only definitions,
   constants and imports of those modules or of third-party modules the run imported, except for
   statements that are images of the run's own import-time statements with the same code.

Commands compare modulo the same map (:func:`rename_command`): a record made by ``python -m
flprivacy.experiments.part3_table1`` is the file that ``python -m <its new module>`` writes.

What this rule cannot see is what :mod:`.fingerprint` cannot see (names looked up by strings
built at run time, code that reads docstrings), and one more thing: a name reached only as an
attribute of a module (``federation.run_fedavg``) is judged at the unit's new home, so a module
that keeps a different object under the old name would not be noticed (one that keeps nothing
under it fails loudly, with an ``AttributeError``). An import that is no longer where it was is
not a change by itself: the code that used it is judged by what its names resolve to.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fingerprint import (
    MAIN_GUARD,
    MODULE,
    _global_names,
    _inert,
    _is_main_guard,
    parsed_units,
    reachable_units,
)

UNAVAILABLE = "the run's code is not available"
"""How :func:`check_moved`'s reason starts when git cannot give back the code a run recorded."""

LIBRARY_PACKAGES = ("flprivacy", "flbook")
"""Top-level packages whose files a record lists (the library and the book's reproduction package)."""


def module_of(rel: str) -> str:
    """``"flprivacy/a/b.py"`` -> ``"flprivacy.a.b"``; ``"flprivacy/a/__init__.py"`` -> ``"flprivacy.a"``."""
    parts = rel.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True)
class Renames:
    """Where code went: ``modules`` maps an old dotted module (or package: its submodules follow)
    to its new name; ``units`` maps ``"old.module:name"`` to ``"new.module:name"`` for a unit that
    moved alone."""

    modules: Mapping[str, str] = field(default_factory=dict)
    units: Mapping[str, str] = field(default_factory=dict)
    provenance_only: frozenset[str] = frozenset()

    def key(self) -> tuple:
        """The map as a hashable value (results computed under it are cached by it)."""
        return (tuple(sorted(self.modules.items())), tuple(sorted(self.units.items())),
                tuple(sorted(self.provenance_only)))

    def exempt(self, dotted: str, name: str) -> bool:
        """Is this old unit one that only computes a record's provenance (not compared)? Named by
        its old module or by the module's new name."""
        here = self.module(dotted)
        return any(self.module(m) == here and u in (name, "*")
                   for m, _, u in (entry.partition(":") for entry in self.provenance_only))

    def rename_text(self, text: str) -> str:
        """A string of the old code with the old module names in it renamed (``"pkg.mod:fn"``,
        ``"-m pkg.mod"``, ``"pkg/mod.py"``)."""
        for old, new in sorted(self.modules.items(), key=lambda kv: -len(kv[0])):
            for a, b in ((old, new), (old.replace(".", "/"), new.replace(".", "/"))):
                text = re.sub(rf"(?<![\w.]){re.escape(a)}(?![\w])", b, text)
        return text

    def module(self, dotted: str) -> str:
        """The module's new name (the longest mapped package prefix decides)."""
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in self.modules:
                return ".".join([self.modules[head], *parts[i:]])
        return dotted

    def unit(self, dotted: str, name: str) -> tuple[str, str]:
        """The new ``(module, name)`` of unit ``name`` of old module ``dotted``."""
        moved = self.units.get(f"{dotted}:{name}") or self.units.get(f"{self.module(dotted)}:{name}")
        if moved is not None:
            module, _, new = moved.partition(":")
            return module, new or name
        return self.module(dotted), name


def rename_command(command: str, renames: Renames) -> str:
    """A recorded command with the module it runs (``-m module``) renamed."""
    words = command.split(" ")
    out = []
    for i, w in enumerate(words):
        if i and words[i - 1] == "-m" and w.split(".")[0] in LIBRARY_PACKAGES:
            w = renames.module(w)
        out.append(w)
    return " ".join(out)


def rename_function(fn: str, renames: Renames) -> str:
    """A point's ``"package.module:function"`` as it is named now."""
    module, _, name = fn.partition(":")
    new_module, new_name = renames.unit(module, name)
    return f"{new_module}:{new_name}"


class Tree:
    """Parsed library files of one version of the code, by dotted module name."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[str, bytes] | None] = {}

    def _read(self, rel: str) -> bytes | None:
        raise NotImplementedError

    def file(self, dotted: str) -> tuple[str, bytes] | None:
        """``(rel, text)`` of the module's file, or None when the module does not exist."""
        if dotted not in self._cache:
            base = dotted.replace(".", "/")
            found = None
            for rel in (f"{base}.py", f"{base}/__init__.py"):
                text = self._read(rel)
                if text is not None:
                    found = (rel, text)
                    break
            self._cache[dotted] = found
        return self._cache[dotted]

    def units(self, dotted: str) -> tuple[dict[str, list[ast.AST]], list[str], bool] | None:
        """The module's units (docstrings stripped), their order and whether annotations are lazy."""
        found = self.file(dotted)
        return None if found is None else _parsed_units(hashlib.sha256(found[1]).hexdigest(), found[1])


@functools.lru_cache(maxsize=1024)
def _parsed_units(sha: str, text: bytes) -> tuple[dict[str, list[ast.AST]], list[str], bool] | None:
    """:func:`~flbook.experiments.fingerprint.parsed_units` of one file's content, parsed once per content."""
    return parsed_units(text)


class NewTree(Tree):
    """The working tree's files under ``root`` (the ``src`` folder)."""

    def __init__(self, root: str | Path) -> None:
        super().__init__()
        self.root = Path(root)

    def _read(self, rel: str) -> bytes | None:
        path = self.root / rel
        return path.read_bytes() if path.is_file() else None

    @functools.cached_property
    def stamp(self) -> str:
        """A hash of every Python file under ``root``: what a resolution in this tree can depend on
        (results cached under it are shared by the records one process checks)."""
        h = hashlib.sha256()
        for path in sorted(self.root.rglob("*.py")):
            h.update(path.relative_to(self.root).as_posix().encode() + b"\0" + path.read_bytes())
        return h.hexdigest()


class OldTree(Tree):
    """The files of ``src`` at a commit, read from git (``git cat-file blob``), each once per process."""

    _blobs: dict[tuple[str, str], bytes | None] = {}

    def __init__(self, commit: str, repo: str | Path) -> None:
        super().__init__()
        self.commit, self.repo = commit, Path(repo)

    def _read(self, rel: str) -> bytes | None:
        key = (self.commit, rel)
        if key not in OldTree._blobs:
            proc = subprocess.run(["git", "cat-file", "blob", f"{self.commit}:src/{rel}"], cwd=self.repo,
                                  capture_output=True, timeout=30)
            OldTree._blobs[key] = proc.stdout if proc.returncode == 0 else None
        return OldTree._blobs[key]


def known_commit(commit: str) -> bool:
    """Whether ``commit`` names the code a run read: not empty, "unknown" or "+dirty"."""
    return bool(commit) and commit != "unknown" and not commit.endswith("+dirty")


_COMMAND_MODULE = re.compile(r"-m ((?:flprivacy|flbook)\.experiments)\.(\w+)")


def command_own_file(record: dict[str, Any]) -> tuple[str, str] | None:
    """``(path, module)`` of the command a record's run executed as ``__main__``: its own file as the
    run named it (``flprivacy/experiments/x.py`` for a run made before the book's package existed)
    and its module's name; None when the record's command names no experiments module."""
    m = _COMMAND_MODULE.search(str(record.get("command") or ""))
    return None if m is None else (f"{m.group(1).replace('.', '/')}/{m.group(2)}.py", m.group(2))


def own_file_at_commit(record: dict[str, Any], own: str) -> tuple[str, str | None] | None:
    """The command's own file as the run's commit holds it, ``(file hash, unit hashes)``, for a
    record that does not list it (run as ``__main__``, a command does not import itself); None
    when the commit does not give it (unknown, or uncommitted changes)."""
    return module_at_commit(str(record.get("commit") or ""), own)


def module_at_commit(commit: str, rel: str) -> tuple[str, str | None] | None:
    """The whole-file hash and the units (``fingerprint.source_units``) of file ``rel``
    (``"flbook/<path>.py"``) as committed at ``commit``, or None when the commit is unknown,
    "+dirty" (the file the run read may differ from the commit's) or lacks the file.

    A command runs its own module as ``__main__``, which the record's ``sources`` (the modules
    the run imported) do not list; a run from a clean commit read that module as committed there,
    so a record is judged by this, as if it had listed it."""
    from flprivacy.config import project_root

    from .fingerprint import source_units

    if not known_commit(commit):
        return None
    text = OldTree(commit, project_root())._read(rel)  # the bytes, as the run hashed them
    return None if text is None else (hashlib.sha256(text).hexdigest()[:16], source_units(text))


def _absolute(node: ast.ImportFrom, dotted: str, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` of module ``dotted`` imports from."""
    if not node.level:
        return node.module or ""
    package = dotted.split(".") if is_package else dotted.split(".")[:-1]
    package = package[:len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _is_library(dotted: str) -> bool:
    return dotted.split(".")[0] in LIBRARY_PACKAGES


def import_targets(node: ast.Import | ast.ImportFrom, dotted: str, is_package: bool) -> list[tuple[str, str]]:
    """``[(bound name, target)]`` of one import statement of module ``dotted``; a target is
    ``"module:<dotted>"`` or ``"attr:<dotted>:<name>"`` (to be resolved)."""
    out = []
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                out.append((a.asname, f"module:{a.name}"))
            else:
                out.append((a.name.split(".")[0], f"module:{a.name.split('.')[0]}"))
    else:
        base = _absolute(node, dotted, is_package)
        for a in node.names:
            out.append((a.asname or a.name, f"attr:{base}:{a.name}"))
    return out


def resolve(tree: Tree, dotted: str, name: str, depth: int = 0) -> str:
    """What ``name`` of module ``dotted`` is: ``"def:<module>:<name>"`` (a definition or assignment,
    the end of any chain of imports), ``"module:<module>"``, ``"ext:<module>:<name>"`` (outside the
    library) or ``"missing:<module>:<name>"``."""
    if not _is_library(dotted):
        return f"ext:{dotted}:{name}"
    info = tree.units(dotted)
    if info is None or depth > 20:
        return f"missing:{dotted}:{name}"
    units = info[0]
    if name not in units:
        sub = f"{dotted}.{name}"
        return f"module:{sub}" if tree.file(sub) is not None else f"missing:{dotted}:{name}"
    last = units[name][-1]
    if not isinstance(last, (ast.Import, ast.ImportFrom)):
        return f"def:{dotted}:{name}"
    is_package = tree.file(dotted)[0].endswith("__init__.py")  # type: ignore[index]
    (_, target), = [t for t in import_targets(last, dotted, is_package) if t[0] == name] or [(name, "?")]
    return follow(tree, target, depth + 1)


def follow(tree: Tree, target: str, depth: int = 0) -> str:
    """Resolve an import target of :func:`import_targets`."""
    kind, _, rest = target.partition(":")
    if kind == "module":
        if not _is_library(rest):
            return f"ext:{rest}"
        return f"module:{rest}" if tree.file(rest) is not None else f"missing:{rest}"
    module, _, name = rest.partition(":")
    return resolve(tree, module, name, depth)


def map_terminal(terminal: str, renames: Renames, new: Tree) -> str:
    """An old tree's resolution, sent through the rename map and resolved in the new tree."""
    kind, _, rest = terminal.partition(":")
    if kind == "def":
        module, _, name = rest.partition(":")
        return resolve(new, *renames.unit(module, name))
    if kind == "module" and _is_library(rest):
        return follow(new, f"module:{renames.module(rest)}")
    return terminal


class _Canonical(ast.NodeTransformer):
    """Replace every import with assignments of the resolved targets, and rename module names in
    strings (see :func:`canonical_digest`)."""

    def __init__(self, tree: Tree, dotted: str, is_package: bool, to_new, rename_text=None,
                 modules: Mapping[str, str] | None = None) -> None:
        self.tree, self.dotted, self.is_package, self.to_new = tree, dotted, is_package, to_new
        self.rename_text = rename_text
        self.modules = modules or {}  # global names bound to a library module -> that module

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        """``module.name`` of a library module bound at the top of the file: what it resolves to."""
        if isinstance(node.value, ast.Name) and node.value.id in self.modules and isinstance(node.ctx, ast.Load):
            return ast.Constant(self.to_new(resolve(self.tree, self.modules[node.value.id], node.attr)))
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if self.rename_text is not None and isinstance(node.value, str):
            return ast.Constant(self.rename_text(node.value))
        return node

    def _imports(self, node):
        return [ast.Assign(targets=[ast.Name(id=bound, ctx=ast.Store())],
                           value=ast.Constant(self.to_new(follow(self.tree, target))))
                for bound, target in import_targets(node, self.dotted, self.is_package)]

    visit_Import = _imports
    visit_ImportFrom = _imports


def canonical_digest(nodes: Iterable[ast.AST], tree: Tree, dotted: str, to_new=lambda t: t,
                     rename_text=None) -> str:
    """Hash of a unit's syntax trees with each import replaced by ``name = "<what it resolves
    to>"`` (through ``to_new``: the rename map, for the old tree), and, for the old tree, the old
    module names in its strings renamed (``rename_text``: a point's ``"package.module:function"``)."""
    found = tree.file(dotted)
    is_package = bool(found and found[0].endswith("__init__.py"))
    nodes = list(nodes)
    bound = _library_modules(tree, dotted)
    local = {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | {
        a.arg for node in nodes for n in ast.walk(node) if isinstance(n, ast.arguments)
        for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg) if a is not None} | {
        (a.asname or a.name).split(".")[0] for node in nodes if not isinstance(node, (ast.Import, ast.ImportFrom))
        for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    modules = {k: v for k, v in bound.items() if k not in local}  # a name the unit rebinds is not the module
    out = []
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            node = ast.Module(body=[node], type_ignores=[])
        if rename_text is not None or any(isinstance(n, (ast.Import, ast.ImportFrom)) or (
                isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in modules)
                for n in ast.walk(node)):
            node = _Canonical(tree, dotted, is_package, to_new, rename_text, modules).visit(copy.deepcopy(node))
        out.append(ast.dump(node))
    return hashlib.sha256("\n".join(out).encode()).hexdigest()[:12]


def _only_attribute_uses(nodes: Iterable[ast.AST], name: str) -> bool:
    """Is ``name`` used in this code only as ``name.attribute`` (read)?"""
    parents = {id(c): n for node in nodes for n in ast.walk(node) for c in ast.iter_child_nodes(n)}
    uses = [n for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name]
    return all(isinstance(parents.get(id(u)), ast.Attribute) and parents[id(u)].value is u
               and isinstance(u.ctx, ast.Load) for u in uses)


def _library_modules(tree: Tree, dotted: str) -> dict[str, str]:
    """The module's global names bound (by an import at its top level) to a library module, and
    that module: ``{"awa": "flprivacy.attacks.awa"}``."""
    info = tree.units(dotted)
    out = {}
    for name, nodes in (info[0] if info else {}).items():
        if nodes and isinstance(nodes[-1], (ast.Import, ast.ImportFrom)):
            t = resolve(tree, dotted, name)
            if t.startswith("module:"):
                out[name] = t.removeprefix("module:")
    return out


_MEMO: dict[tuple, object] = {}


def _memo(key: tuple, compute):
    """Results keyed by everything they depend on (the files' contents, the new tree's, the rename
    map), shared by the records one process checks."""
    if key not in _MEMO:
        _MEMO[key] = compute()
    return _MEMO[key]


def _literal(tree: Tree, terminal: str) -> str | None:
    """The value of a definition that assigns a literal (constants, tuples, lists, dicts, sets,
    signs; no names, no calls), dumped; None for anything else."""
    kind, _, rest = terminal.partition(":")
    if kind != "def":
        return None
    module, _, name = rest.partition(":")
    nodes = tree.units(module)[0].get(name, [])  # type: ignore[index]
    if len(nodes) != 1 or not isinstance(nodes[0], (ast.Assign, ast.AnnAssign)) or nodes[0].value is None:
        return None
    value = nodes[0].value
    allowed = (ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load)
    return ast.dump(value) if all(isinstance(n, allowed) for n in ast.walk(value)) else None


def same_literal(old: Tree, old_terminal: str, new: Tree, new_terminal: str) -> bool:
    """Two definitions that assign the same literal value are the same object for a run (a table of
    the paper kept in two places)."""
    a = _literal(old, old_terminal)
    return a is not None and a == _literal(new, new_terminal)


def _module_nodes(units: Mapping[str, list[ast.AST]], which: str) -> list[ast.AST]:
    nodes = units.get(MODULE, [])
    return [n for n in nodes if _is_main_guard(n) == (which == MAIN_GUARD)]


_OLD_ROOTS: dict[str, Path] = {}
_SCRATCH: list[tempfile.TemporaryDirectory] = []


def _old_root(commit: str) -> Path:
    """A folder holding the run's files as of ``commit`` (for the reachability analysis, which reads
    files), kept for the process so that records of the same commit share its parses."""
    if commit not in _OLD_ROOTS:
        if not _SCRATCH:
            _SCRATCH.append(tempfile.TemporaryDirectory(prefix="flbook-provenance-"))
        _OLD_ROOTS[commit] = Path(_SCRATCH[0].name) / commit
    return _OLD_ROOTS[commit]


def check_moved(sources: Mapping[str, str], commit: str, entries: Iterable[tuple[str, str]], renames: Renames,
                repo: str | Path, new_root: str | Path) -> tuple[bool, str]:
    """``(current, why)``: is the code a run executed (its record's ``sources`` at ``commit``, run
    from ``entries``, ``(file, unit)`` of the old code) the code under ``new_root`` modulo
    ``renames``? The rule is in the module docstring; ``why`` is the first difference found."""
    for _, why in differences(sources, commit, entries, renames, repo, new_root):
        return False, why
    return True, ""


def differences(sources: Mapping[str, str], commit: str, entries: Iterable[tuple[str, str]], renames: Renames,
                repo: str | Path, new_root: str | Path) -> Iterator[tuple[tuple[str, str] | None, str]]:
    """Every difference :func:`check_moved`'s rule finds between the code a run executed and the
    code under ``new_root`` modulo ``renames``, lazily, as ``(where, why)``: ``where`` is the
    ``(module, unit)`` *now* whose code differs from the image of what the run could reach (a
    changed, removed or re-bound unit, or one whose global names resolve elsewhere), or None for a
    difference no unit carries (the run's code unavailable, something new run at import). A canary
    that reaches every ``where`` and agrees speaks for all of them
    (:func:`flbook.experiments.canary.uncovered`); a None is never covered."""
    old, new = OldTree(commit, repo), NewTree(new_root)
    files: dict[str, tuple[dict[str, list[ast.AST]], bool]] = {}
    content: dict[str, str] = {}  # each file's content hash: what its units' global names depend on
    tmp = _old_root(commit)
    for rel, sha in sources.items():
        found = old.file(module_of(rel))
        if found is None or found[0] != rel:
            yield None, f"{UNAVAILABLE}: {rel} at commit {commit[:12]} is not in git (a shallow clone?)"
            return
        if hashlib.sha256(found[1]).hexdigest()[:len(sha)] != sha:
            yield None, f"{UNAVAILABLE}: {rel} at commit {commit[:12]} is not the file the run recorded"
            return
        info = old.units(module_of(rel))
        if info is None:
            yield None, f"{rel} at commit {commit[:12]} does not parse"
            return
        files[rel] = (info[0], info[2])
        content[rel] = hashlib.sha256(found[1]).hexdigest()
        if not (tmp / rel).is_file():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(found[1])
    reach = reachable_units(files, entries, tmp)
    if reach is None:
        reach = {(rel, u) for rel, (units, _) in files.items() for u in units} | {
            (rel, MAIN_GUARD) for rel in files}

    def to_new(terminal: str) -> str:
        return map_terminal(terminal, renames, new)

    checked: set[tuple[str, str]] = set()  # (new module, unit) images of reachable old units
    for rel, unit in sorted(reach):
        dotted = module_of(rel)
        units = files[rel][0]
        where = f"{rel}:{unit}"
        if renames.exempt(dotted, unit):
            checked.add(renames.unit(dotted, unit))
            continue
        if unit in (MODULE, MAIN_GUARD):
            new_module = renames.module(dotted)
            new_info = new.units(new_module)
            if new_info is None:
                yield (new_module, unit), f"{where}: its module {new_module} is gone, and the run ran it at import"
                continue
            before = _memo(("old", renames.key(), commit, new.stamp, dotted, unit),
                           lambda: canonical_digest(_module_nodes(units, unit), old, dotted, to_new, renames.rename_text))
            after = _memo(("new", new.stamp, new_module, unit),
                          lambda: canonical_digest(_module_nodes(new_info[0], unit), new, new_module))
            if before != after:
                yield (new_module, unit), f"{where} changed since the run (now in {new_module}), and the run ran it"
            checked.add((new_module, unit))
            nodes, here = _module_nodes(units, unit), unit
        elif unit not in units:
            continue
        else:
            nodes = units[unit]
            old_terminal = resolve(old, dotted, unit)
            new_module, new_name = renames.unit(dotted, unit)
            new_terminal = resolve(new, new_module, new_name)
            if new_terminal.startswith("missing:") and old_terminal != f"def:{dotted}:{unit}":
                continue  # an import no longer here: the code that used it is judged by what its names resolve to
            if new_terminal.startswith("missing:"):
                yield (new_module, new_name), (f"{where} removed since the run ({new_module}:{new_name} is missing), "
                                               "and the run can reach it")
                continue
            if to_new(old_terminal) != new_terminal and not same_literal(old, old_terminal, new, new_terminal):
                yield (new_module, new_name), (f"{where} resolved to {old_terminal} in the run, and "
                                               f"{new_module}:{new_name} now resolves to {new_terminal}")
                continue
            checked.add((new_module, new_name))
            if old_terminal != f"def:{dotted}:{unit}":
                continue  # an import: its definition is judged where it is defined (it is reachable too)
            _, home, home_name = new_terminal.split(":")
            new_units = new.units(home)[0]  # type: ignore[index]
            before = _memo(("old", renames.key(), commit, new.stamp, dotted, unit),
                           lambda: canonical_digest(nodes, old, dotted, to_new, renames.rename_text))
            after = _memo(("new", new.stamp, home, home_name),
                          lambda: canonical_digest(new_units[home_name], new, home))
            if before != after and not same_literal(old, old_terminal, new, new_terminal):
                yield (home, home_name), f"{where} changed since the run (now {home}:{home_name}), and the run can reach it"
            checked.add((home, home_name))
            new_module, here = home, home_name
        # every global the unit looks up resolves to the image of what it resolved to in the run
        names = _memo(("globals", content[rel], unit), lambda: _global_names(nodes))
        for g in sorted(names):
            if g == unit:
                continue
            old_g = resolve(old, dotted, g) if g in units else "builtin"
            if old_g.startswith("module:") and _only_attribute_uses(nodes, g):
                continue  # module.name: compared as what it resolves to (canonical_digest)
            before = to_new(old_g) if g in units else "builtin"
            now_units = new.units(new_module)[0]  # type: ignore[index]
            after = resolve(new, new_module, g) if g in now_units else "builtin"
            if before != after and not same_literal(old, old_g, new, after):
                yield (new_module, here), f"{where} looks up {g!r}: {before} in the run, {after} now"
    same, why = _nothing_new_at_import(files, reach, checked, renames, old, new)
    if not same:
        yield None, why


def _nothing_new_at_import(files, reach, checked, renames: Renames, old: Tree, new: NewTree) -> tuple[bool, str]:
    """Step 5 of the module docstring: every module the new code imports runs nothing new at import."""
    old_external = {t.split(":")[1].split(".")[0] for rel in files
                    for name, nodes in files[rel][0].items() for node in nodes
                    for n in (ast.walk(node) if name == MODULE else [node])
                    if isinstance(n, (ast.Import, ast.ImportFrom))
                    for _, target in import_targets(n, module_of(rel), rel.endswith("__init__.py"))
                    for t in [follow(old, target)] if t.startswith("ext:")}
    exempt_modules = {renames.module(u[:-2]) for u in renames.provenance_only if u.endswith(":*")}
    todo = [renames.module(module_of(rel)) for rel in files]
    seen: set[str] = set()
    while todo:
        dotted = todo.pop()
        if dotted in seen:
            continue
        seen.add(dotted)
        parts = dotted.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b
        info = new.units(dotted)
        if info is None:
            continue
        units, _, lazy = info
        rel = new.file(dotted)[0]  # type: ignore[index]
        for name, nodes in units.items():
            for node in nodes:
                top = name != MODULE or not _is_main_guard(node)  # runs at import (else: at a call)
                for n in ast.walk(node):
                    if isinstance(n, (ast.Import, ast.ImportFrom)):
                        at_import = top and (name == MODULE or isinstance(node, (ast.Import, ast.ImportFrom)))
                        for _, target in import_targets(n, dotted, rel.endswith("__init__.py")):
                            t = follow(new, target)
                            kind, _, rest = t.partition(":")
                            top_name = rest.split(":")[0].split(".")[0]
                            if (at_import and kind == "ext" and top_name not in sys.stdlib_module_names
                                    and top_name not in old_external):
                                return False, f"{rel} imports {rest} at import, which the run did not import"
                            if kind in ("module", "def") and at_import:
                                todo.append(rest.split(":")[0])  # a function's import of a file the run
                                # did not record never ran in the run, nor does it in the same code now
                            if kind == "missing":
                                return False, f"{rel}:{name} imports {rest}, which does not exist"
            if (dotted, name) in checked or name == MAIN_GUARD or dotted in exempt_modules:
                continue
            if name == MODULE:
                nodes = [n for n in nodes if not _is_main_guard(n)]
                if not nodes:
                    continue
                return False, f"{rel} runs statements at import that the run did not run"
            rest = [n for n in nodes if not isinstance(n, (ast.Import, ast.ImportFrom))]  # imports: followed above
            if rest and not _inert(rest, rel, [rel], new.root, lazy):
                return False, f"{rel}:{name} runs code at import, and the run did not run it"
    return True, ""


def renames() -> Renames:
    """The project's rename map (:mod:`.renames`)."""
    from . import renames as data

    return Renames(data.MODULES, data.UNITS, data.PROVENANCE_ONLY)


def moved_status(record: Mapping, entries: list[tuple[str, str]], own: tuple[str, str] | None = None
                 ) -> tuple[bool, str]:
    """:func:`check_moved` for a result or point record: its ``sources`` (plus ``own``, the
    command's own module ``(file, hash)`` that a run as ``__main__`` does not list) at its
    ``commit``, from ``entries``, against the working tree, modulo :func:`renames`. The reason is
    empty when git cannot give the run's code (an unknown, uncommitted or absent commit): the
    caller's own reason then stands."""
    from flprivacy.config import project_root

    commit = str(record.get("commit") or "")
    if not known_commit(commit):
        return False, ""
    sources = dict(record.get("sources") or {})
    if own is not None:
        sources[own[0]] = own[1]
    root = project_root()
    current, why = check_moved(sources, commit, entries, renames(), root, Path(__file__).resolve().parents[2])
    return current, "" if why.startswith(UNAVAILABLE) else why


def moved_differences(record: Mapping, entries: list[tuple[str, str]], own: tuple[str, str] | None = None
                      ) -> list[tuple[tuple[str, str] | None, str]] | None:
    """All of :func:`differences` for a result or point record (as :func:`moved_status` reads it),
    or None when git cannot give the run's code."""
    from flprivacy.config import project_root

    commit = str(record.get("commit") or "")
    if not known_commit(commit):
        return None
    sources = dict(record.get("sources") or {})
    if own is not None:
        sources[own[0]] = own[1]
    found = list(differences(sources, commit, entries, renames(), project_root(), Path(__file__).resolve().parents[2]))
    if any(where is None and why.startswith(UNAVAILABLE) for where, why in found):
        return None
    return found
