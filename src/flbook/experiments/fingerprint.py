"""Fingerprints of the library's source files, fine enough that an edit which cannot change a
result's numbers does not make it stale.

A result file records, for every library file its run imported, the file's SHA-256 (``sources``,
exact provenance) and its *units* (``source_units``, :func:`source_units`): one hash per top-level
name, of the syntax tree of every top-level statement that binds it, without docstrings,
comments or layout. ``python -m flbook.experiments.reproduce`` calls the result current
(:func:`check_sources`) while, in each such file,

* every recorded unit still exists with the same hash (a changed or removed definition, default
  argument, constant or import target makes the file stale; a docstring, comment or blank-line
  edit does not);
* the recorded units keep their order (the sequence of the names the top-level statements
  bind must remain a subsequence of today's: adding statements anywhere is fine, moving or
  interleaving them is not);
* every unit added since is *inert* and *unreferenced*: its statements do nothing at import
  but bind its name (a function or class without calls in its decorators, defaults, evaluated
  annotations, bases or class-level values except a few pure builtins; a constant; an import
  of a module outside the library or of a library file the run imported), its name is not a
  dunder, and the recorded code of the run never names it (a global or builtin name looked up
  in that file, or, in any recorded file, an attribute, an imported name, a name in an
  annotation or a string with its spelling, and no recorded code lists a namespace with ``vars``,
  ``dir``, ``globals``, ``locals``, ``getmembers`` or ``__dict__``), so nothing the run executed
  can reach it.

Given the run's *entries* (the function a command or a point started from), a changed function
or class is tolerated too when the run could not have executed it (:func:`reachable_units`): no
code the run could execute names it. That code is every unit whose statements run at import (the
``"<module>"`` units, which hold ``if __name__ == "__main__": main()``, constants computed by a
call, decorated or registering definitions) and, transitively, every unit such code names: a
global or builtin name of its own file, or, in any recorded file, an attribute, an imported name
or a name in an annotation spelled like the unit, and a string only where the code looks a name
up at run time (``getattr``, ``hasattr``, ``import_module`` ...): the constant names it looks up,
or every identifier in the strings of the run's code when a looked-up name is computed (a
point's ``"package.module:function"`` among them). Code that lists a namespace
makes everything reachable. So an edit to how the ledger judges Fig. 4 leaves current the Part
III files whose runs imported the ledger only for the paper's tables. A changed assignment,
import or top-level statement always makes the file stale (its import-time effect may differ),
as does a changed unit the run can reach; an added unit is judged the same way.

Everything that is not a top-level definition, import or assignment to plain names (``if``
and ``try`` blocks, calls, assignments to attributes or items, ``del``, star imports) is one
unit, ``"<module>"``, kept in order; ``__all__`` is its own unit, and a change to it is ignored
unless a recorded file star-imports or reads ``__all__``. A name bound twice keeps every
statement that binds it. A file that does not parse falls back to its whole-file hash, and so
do records written before units were recorded (their ``sources`` alone).

What the rule cannot see: a name looked up by a string built at run time (``getattr(m, f"x_{k}",
default)``), code that reads docstrings (``__doc__``) to compute numbers, a base class that
registers its subclasses (``__init_subclass__``), the order in which modules are first
imported, and, under the reachability rule above, an object of a class created other than by
naming the class (unpickling by a stored class path) or a function edited from a decorator or
default that ran code at import to one that does not. In the library the only look-up by a
run-time string is ``flower_deploy``'s ``getattr(flprivacy, name)`` of the function a message
names; no code computes a number from a docstring or registers subclasses. Hashes are of the
syntax tree of the Python that runs the check: under another Python version every unit may
read as changed (stale, never wrongly current).
"""

from __future__ import annotations

import ast
import hashlib
import re
import symtable
from collections.abc import Iterable, Mapping
from pathlib import Path

MODULE = "<module>"
"""The unit of every top-level statement that is not a definition, import or name assignment."""

HEX = 12
"""Hex digits of a unit's hash (48 bits: a changed unit keeps its hash with probability 2^-48)."""

PURE_CALLS = frozenset({
    "frozenset", "tuple", "list", "dict", "set", "range", "int", "float", "str", "bool", "bytes", "complex",
    "sorted", "len", "min", "max", "abs", "round", "zip", "enumerate", "reversed", "sum", "any", "all",
    "staticmethod", "classmethod", "property", "dataclass", "dataclasses.dataclass", "field", "dataclasses.field",
    "lru_cache", "functools.lru_cache", "cache", "functools.cache", "functools.cached_property", "cached_property",
    "functools.partial", "partial", "functools.total_ordering", "total_ordering", "functools.wraps", "wraps",
    "abstractmethod", "abc.abstractmethod", "contextmanager", "contextlib.contextmanager", "overload",
    "typing.overload", "runtime_checkable", "typing.runtime_checkable", "TypeVar", "typing.TypeVar", "NewType",
    "typing.NewType", "Path", "re.compile", "torch.no_grad", "torch.inference_mode", "torch.enable_grad",
    "math.sqrt", "math.log", "math.exp",
})
"""Callables whose call at import time only builds a value (no state, no randomness): an added unit
may use them and stay inert. Any other call makes an added unit count as a change."""


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """Drop every statement that is a bare constant (docstrings, attribute docstrings, ``...``):
    they do nothing but set ``__doc__``. A block left empty gets a ``pass``."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                kept = [s for s in stmts if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                if stmts and not kept and field == "body" and not isinstance(node, ast.Module):
                    kept = [ast.Pass()]
                setattr(node, field, kept)
    return tree


def _name_targets(target: ast.expr) -> list[str] | None:
    """The names a plain assignment target binds, or None when it stores into an attribute or item."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _name_targets(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        out = []
        for t in target.elts:
            names = _name_targets(t)
            if names is None:
                return None
            out += names
        return out
    return None


def _bindings(stmt: ast.stmt) -> list[tuple[str, ast.AST]]:
    """``[(name, node)]``: the unit(s) one top-level statement belongs to, each with the node that
    stands for it (an import of several names counts as one import per name); ``MODULE`` for the rest."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(stmt.name, stmt)]
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name.split(".")[0], ast.Import(names=[a])) for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and not any(a.name == "*" for a in stmt.names):
        return [(a.asname or a.name, ast.ImportFrom(module=stmt.module, names=[a], level=stmt.level))
                for a in stmt.names]
    targets = (stmt.targets if isinstance(stmt, ast.Assign)
               else [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else None)
    if targets is not None:
        names = [_name_targets(t) for t in targets]
        if all(n is not None for n in names):
            return [(n, stmt) for n in dict.fromkeys(x for ns in names for x in ns)]
    return [(MODULE, stmt)]


def _parse(text: str | bytes) -> ast.Module | None:
    try:
        return _strip_docstrings(ast.parse(text))
    except (SyntaxError, ValueError):  # ValueError: null bytes
        return None


def _units(tree: ast.Module) -> tuple[dict[str, list[ast.AST]], list[str]]:
    """``({unit: [its nodes, in order]}, [the unit of each top-level binding, in order])``."""
    units: dict[str, list[ast.AST]] = {}
    order: list[str] = []
    for stmt in tree.body:
        for name, node in _bindings(stmt):
            units.setdefault(name, []).append(node)
            order.append(name)
    return units, order


def _digest(nodes: Iterable[ast.AST]) -> str:
    text = "\n".join(ast.dump(n) for n in nodes)  # no line or column attributes
    return hashlib.sha256(text.encode()).hexdigest()[:HEX]


def source_units(text: str | bytes) -> str | None:
    """The units of a Python source, as one line: the names its top-level statements bind, in
    order, each written ``name=hash`` where it is first bound and ``name`` where it is bound again
    (``"<module>"`` for the other statements), e.g. ``"math=f329650e2c61 RATE=46922232ab55
    f=04d423836c12"``; ``None`` when the source does not parse.

    Args:
        text: the file's content.
    """
    tree = _parse(text)
    if tree is None:
        return None
    units, order = _units(tree)
    seen: set[str] = set()
    words = []
    for name in order:
        words.append(name if name in seen else f"{name}={_digest(units[name])}")
        seen.add(name)
    return " ".join(words)


def decode_units(line: str) -> tuple[dict[str, str], list[str]]:
    """``({name: hash}, [the names in order])`` of a :func:`source_units` line.

    Args:
        line: a record's units of one file.
    """
    if not isinstance(line, str):
        raise TypeError(f"line: expected the str of source_units, got {type(line).__name__}")
    hashes, order = {}, []
    for word in line.split():
        name, _, digest = word.partition("=")
        if digest:
            hashes[name] = digest
        order.append(name)
    return hashes, order


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _pure(node: ast.AST | None) -> bool:
    """An expression whose evaluation only builds a value: no call but to :data:`PURE_CALLS`
    (with pure arguments), no ``await``, ``yield`` or ``:=``."""
    if node is None:
        return True
    for n in ast.walk(node):
        if isinstance(n, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return False
        if isinstance(n, ast.Call) and _dotted(n.func) not in PURE_CALLS:
            return False
    return True


def _pure_decorator(node: ast.expr) -> bool:
    call = node.func if isinstance(node, ast.Call) else node  # ``@d`` calls d(f); ``@d(x)`` calls d(x)(f)
    return _dotted(call) in PURE_CALLS and _pure(node)


def _inert_def(node: ast.FunctionDef | ast.AsyncFunctionDef, lazy_annotations: bool) -> bool:
    a = node.args
    annotations = [] if lazy_annotations else [node.returns, *(x.annotation for x in
                                               (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x)]
    return (all(map(_pure_decorator, node.decorator_list)) and all(map(_pure, a.defaults))
            and all(_pure(d) for d in a.kw_defaults if d is not None) and all(map(_pure, annotations)))


def _inert_class(node: ast.ClassDef, lazy_annotations: bool) -> bool:
    if node.keywords or not all(map(_pure_decorator, node.decorator_list)) or not all(map(_pure, node.bases)):
        return False  # a metaclass or class keywords run code
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ok = _inert_def(stmt, lazy_annotations)
        elif isinstance(stmt, ast.ClassDef):
            ok = _inert_class(stmt, lazy_annotations)
        elif isinstance(stmt, ast.Assign):
            ok = _pure(stmt.value) and all(_name_targets(t) is not None for t in stmt.targets)
        elif isinstance(stmt, ast.AnnAssign):
            ok = (isinstance(stmt.target, ast.Name) and _pure(stmt.value)
                  and (lazy_annotations or _pure(stmt.annotation)))
        else:
            ok = isinstance(stmt, ast.Pass)
        if not ok:
            return False
    return True


def _library_files_of_import(node: ast.Import | ast.ImportFrom, rel: str) -> list[str] | None:
    """The library files (``flprivacy/...py``) an import statement of file ``rel`` may load, or
    None for ``__future__`` (which changes how the whole file compiles)."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return None
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    else:
        if node.level:
            package = rel.removesuffix(".py").split("/")
            package = package[:-1] if package[-1] != "__init__" else package[:-1]
            # ``rel`` of flprivacy/a/b.py is in package flprivacy/a; each further dot goes one level up
            package = package[:len(package) - (node.level - 1)]
            base = ".".join([*package, *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        modules = [base, *(f"{base}.{a.name}" for a in node.names)]
    out = []
    for m in modules:
        if m.split(".")[0] not in ("flprivacy", "flbook"):
            continue
        parts = m.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c imports a, a.b and a.b.c
            stem = "/".join(parts[:i])
            out += [f"{stem}.py", f"{stem}/__init__.py"]
    return out


def _inert(nodes: list[ast.AST], rel: str, recorded_files: Iterable[str], root: Path,
           lazy_annotations: bool) -> bool:
    """Does every statement of an added unit only bind its name at import (see the module docstring)?"""
    recorded = set(recorded_files)
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ok = _inert_def(node, lazy_annotations)
        elif isinstance(node, ast.ClassDef):
            ok = _inert_class(node, lazy_annotations)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            files = _library_files_of_import(node, rel)
            ok = files is not None and all(f in recorded or not (root / f).is_file() for f in files)
        elif isinstance(node, ast.Assign):
            ok = _pure(node.value) and all(_name_targets(t) is not None for t in node.targets)
        elif isinstance(node, ast.AnnAssign):
            ok = (isinstance(node.target, ast.Name) and _pure(node.value)
                  and (lazy_annotations or _pure(node.annotation)))
        else:  # AugAssign of a new name, or a statement of the "<module>" unit
            ok = False
        if not ok:
            return False
    return True


def _global_names(nodes: list[ast.AST]) -> set[str]:
    """The names that code looks up in its module's globals or the builtins (symtable's analysis)."""
    source = ast.unparse(ast.Module(body=[n for n in nodes if isinstance(n, ast.stmt)], type_ignores=[]))
    out: set[str] = set()
    stack = [symtable.symtable(source, "<units>", "exec")]
    while stack:
        table = stack.pop()
        for sym in table.get_symbols():
            if sym.is_global() or sym.is_free() or (table.get_type() == "module" and sym.is_referenced()):
                out.add(sym.get_name())
        stack += table.get_children()
    return out


ENUMERATES = "<enumerates>"
"""Marks recorded code that lists a namespace (``vars``, ``dir``, ``globals``, ``locals``,
``getmembers``, ``__dict__``): a name added anywhere could appear in what it lists."""


def _mentions(nodes: list[ast.AST]) -> set[str]:
    """Names another file may reach a module's attribute by: attributes, imported names, strings
    spelled like an identifier, and names in annotations (``typing.get_type_hints`` resolves them,
    though symtable does not see them under ``from __future__ import annotations``); plus
    :data:`ENUMERATES` where the code lists a namespace."""
    out: set[str] = set()
    for node in nodes:
        lookups = set()  # ``globals()["x"]``, ``obj.__dict__["x"]``: a look-up of one name, not a listing
        for n in ast.walk(node):
            if (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
                    and isinstance(n.slice.value, str)):
                inner = n.value.func if isinstance(n.value, ast.Call) and not n.value.args else n.value
                lookups.add(id(inner))
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute):
                out.add(n.attr)
                if n.attr in ("__dict__", "getmembers") and id(n) not in lookups:
                    out.add(ENUMERATES)
            elif isinstance(n, ast.alias):
                out.add(n.name.split(".")[-1])
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
                out.add(n.value)
            elif (isinstance(n, ast.Name) and n.id in ("vars", "dir", "globals", "locals", "getmembers")
                  and id(n) not in lookups):
                out.add(ENUMERATES)
            annotations = ([n.annotation] if isinstance(n, (ast.arg, ast.AnnAssign)) else
                           [n.returns] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else [])
            for a in annotations:
                if a is not None:
                    out.update(x.id for x in ast.walk(a) if isinstance(x, ast.Name))
    return out


_BY_CONTENT: dict[tuple, object] = {}
"""What is computed from a file's content alone, keyed by what it is (``"parsed"``,
``"digests"``, ``"references"``, ``"mentions"``), the content's hash (:func:`_sha`) and any
further argument, not by the file's path: a plan checks dozens of records, many at different
commits whose files (read from git into a folder per commit) share most of their contents, so
each content is parsed and analysed once per process. ``tests/test_reproduce.py`` checks that
every record's answer is the same with this memo and without it (:func:`memo_disabled`)."""

_MEMO_ON = [True]


def _by_content(key: tuple, compute):
    if not _MEMO_ON[0]:
        return compute()
    if key not in _BY_CONTENT:
        _BY_CONTENT[key] = compute()
    return _BY_CONTENT[key]


class memo_disabled:
    """A context in which every content-keyed result (:data:`_BY_CONTENT`) and every
    reachability (:func:`reachable_units`) is computed afresh, for comparing answers with and
    without the memo."""

    def __enter__(self) -> None:
        _MEMO_ON[0] = False

    def __exit__(self, *exc) -> None:
        _MEMO_ON[0] = True


def _mentions_in(path: str, sha: str, keep: frozenset[str]) -> frozenset[str]:
    """:func:`_mentions` of the units ``keep`` of a file (of content ``sha``), memoised by content:
    a plan checks many records that imported the same files."""
    def compute() -> frozenset[str]:
        units = _parsed(path, sha)[0]
        return frozenset(_mentions([n for u in sorted(keep) for n in units[u]]))

    return _by_content(("mentions", sha, keep), compute)


def parsed_units(text: str | bytes) -> tuple[dict[str, list[ast.AST]], list[str], bool] | None:
    """A source's units (nodes), their order and whether it has ``from __future__ import
    annotations``; None when it does not parse."""
    tree = _parse(text)
    if tree is None:
        return None
    units, order = _units(tree)
    lazy = any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations"
               for a in s.names) for s in tree.body)
    return units, order, lazy


def _parsed(path: str, sha: str) -> tuple[dict[str, list[ast.AST]], list[str], bool] | None:
    """:func:`parsed_units` of a file, memoised by content (``sha``, :func:`_sha` of the file at
    ``path``), so that checking many records parses each content once."""
    return _by_content(("parsed", sha), lambda: parsed_units(Path(path).read_bytes()))


def _unit_digests(path: str, sha: str) -> dict[str, str]:
    """Every unit's digest (:func:`_digest`) of a file of content ``sha``; memoised by content, so
    that checking many records that imported the same file digests it once."""
    return _by_content(("digests", sha),
                       lambda: {name: _digest(nodes) for name, nodes in _parsed(path, sha)[0].items()})


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def check_sources(sources: Mapping[str, str], units: Mapping[str, str] | None,
                  root: str | Path, entries: Iterable[tuple[str, str]] | None = None) -> tuple[bool, str]:
    """``(current, why)``: is the library code a run recorded still the code under ``root``?

    Args:
        sources: the record's ``{"flprivacy/<path>.py": whole-file sha}``.
        units: the record's ``source_units`` (``{file: source_units(text)}``), or None for a record
            written before units were recorded; a file without units is judged by its ``sources`` hash.
            Everything else about the rule is in the module docstring.
        root: the directory that holds the ``flprivacy`` package (``src``).
        entries: the functions the run started from, ``(file, name)`` (a command's ``main``, a
            point's function); given, a changed function or class, or an added unit, that the
            run could not reach from them (:func:`reachable_units`) leaves the record current.
            None: every recorded unit counts, and an added unit must be unreferenced.

    Returns:
        ``(True, "")``, or ``(False, reason)`` naming the first file and unit that changed, e.g.
        ``"flprivacy/optimum.py:tuned_local_models changed since the run"``.
    """
    root = Path(root)
    units = units or {}
    if not isinstance(units, Mapping):
        raise TypeError(f"units: expected a dict of per-file unit dicts or None, got {type(units).__name__}")
    parsed, added, exports, changed, opaque = {}, [], [], [], []
    for rel, sha in sources.items():
        path = root / rel
        if not path.is_file():
            return False, f"{rel} removed since the run"
        now = _sha(path)
        recorded = units.get(rel)
        if not isinstance(recorded, str):  # the whole-file rule
            if now != sha:
                return False, f"{rel} changed since the run"
            recorded = None
        info = _parsed(str(path), now)
        if recorded is None:
            if info is not None:
                parsed[rel] = (info, set(info[0]))  # unchanged file: all of it is the run's code
            else:
                opaque.append(rel)  # unchanged, but its code cannot be read for reachability
            continue
        if info is None:
            return False, f"{rel} changed since the run (it no longer parses)"
        cur, order, lazy = info
        digests = _unit_digests(str(path), now)
        recorded, recorded_order = decode_units(recorded)
        for name, digest in recorded.items():
            if name not in cur or digests[name] != digest:
                why = f"{rel}:{name} {'removed' if name not in cur else 'changed'} since the run"
                if name == "__all__":
                    exports.append(why)  # matters only to a star import or a reader of __all__ (below)
                elif entries is None or name not in cur or not all(
                        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in cur[name]):
                    return False, why
                else:  # a function or class: stale only if the run can reach it (below)
                    changed.append((rel, name, why))
        if not _is_subsequence(recorded_order, order):
            return False, f"{rel}: top-level statements reordered since the run"
        parsed[rel] = (info, {name for name in recorded if name in cur and f"{rel}:{name} changed since the run"
                              not in exports})  # the recorded code still there (less a changed __all__)
        added += [(rel, name) for name in cur if name not in recorded]
    if entries is not None and (changed or added):
        return _judge_by_reach(parsed, added, exports, changed, opaque, [tuple(e) for e in entries], root)
    if not added and not exports:
        return True, ""
    reads_all = any(_reads_all(info[0], keep) for info, keep in parsed.values())
    if exports and reads_all:
        return False, exports[0]
    mentioned = set().union(*(_mentions_in(str(root / rel), _sha(root / rel), frozenset(keep))
                              for rel, (_, keep) in parsed.items()))
    for rel, name in added:
        (cur, _, lazy), keep = parsed[rel]
        if name == "__all__" and not reads_all:
            continue
        if reads_all:  # a star import binds the new name in another file too: leave it to the whole-file rule
            return False, f"{rel}:{name} added since the run, and a recorded file star-imports or reads __all__"
        if name.startswith("__") and name.endswith("__"):
            return False, f"{rel}:{name} added since the run (a module attribute Python itself reads)"
        if name == MODULE or not _inert(cur[name], rel, sources, root, lazy):
            return False, f"{rel}:{name} added since the run, and it runs code at import"
        if ENUMERATES in mentioned:
            return False, f"{rel}:{name} added since the run, and the run's code lists a namespace (vars, dir, ...)"
        if name in mentioned or name in _global_names([n for u in keep for n in cur[u]]):
            return False, f"{rel}:{name} added since the run, and the run's code refers to that name"
    return True, ""


def _reads_all(units: Mapping[str, list[ast.AST]], keep: Iterable[str]) -> bool:
    """Does this recorded code star-import, or read ``__all__``?"""
    for u in keep:
        for node in units[u]:
            for n in ast.walk(node):
                if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
                    return True
                if isinstance(n, ast.Name) and n.id == "__all__" and isinstance(n.ctx, ast.Load):
                    return True
                if isinstance(n, ast.Attribute) and n.attr == "__all__":
                    return True
    return False


#: Calls that look an attribute or a module up by a name given at run time.
DYNAMIC_LOOKUPS = frozenset({"getattr", "hasattr", "setattr", "delattr", "attrgetter", "methodcaller",
                             "import_module", "__import__"})


def _constant_strings(node: ast.AST | None) -> set[str] | None:
    """The strings an expression can only be (a string constant, or a tuple, list or set of them),
    else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        parts = [_constant_strings(e) for e in node.elts]
        return None if any(p is None for p in parts) else set().union(*parts)
    return None


def _looked_up(nodes: list[ast.AST]) -> set[str] | None:
    """The names this code's dynamic look-ups (:data:`DYNAMIC_LOOKUPS`) can use: constant names, and
    variables bound only to constants or looping over a constant tuple; None when a name is
    computed or passed in (any string may then be looked up)."""
    out: set[str] = set()
    for node in nodes:
        bound: dict[str, set[str] | None] = {}  # a variable's possible strings; None: computed
        for n in ast.walk(node):
            pairs = ([(n.target, n.iter)] if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) else
                     [(t, n.value) for t in n.targets] if isinstance(n, ast.Assign) else
                     [(n.target, n.value)] if isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) else [])
            for target, value in pairs:
                now = _constant_strings(value) if isinstance(target, ast.Name) else None
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        before = bound.get(t.id, set())
                        bound[t.id] = None if now is None or before is None else before | now
            if isinstance(n, ast.arguments):
                for a in (*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg):
                    if a is not None:
                        bound[a.arg] = None  # a parameter: any string
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            fn = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id if isinstance(n.func, ast.Name) else None
            if fn not in DYNAMIC_LOOKUPS:
                continue
            k = 1 if fn in ("getattr", "hasattr", "setattr", "delattr") else 0
            args = n.args[:k + 1]
            arg = args[k] if len(args) > k and not any(isinstance(a, ast.Starred) for a in args) else None
            names = _constant_strings(arg)
            if names is None and isinstance(arg, ast.Name):
                names = bound.get(arg.id)
            if names is None:
                return None
            out |= names
    return out


def _names_not_strings(nodes: list[ast.AST]) -> set[str]:
    """The attribute, imported and annotation names of this code: :func:`_mentions` without its
    strings and its namespace listings."""
    out: set[str] = set()
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute):
                out.add(n.attr)
            elif isinstance(n, ast.alias):
                out.add(n.name.split(".")[-1])
            annotations = ([n.annotation] if isinstance(n, (ast.arg, ast.AnnAssign)) else
                           [n.returns] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else [])
            out.update(x.id for a in annotations if a is not None for x in ast.walk(a) if isinstance(x, ast.Name))
    return out


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

MAIN_GUARD = "<__main__>"
"""The pseudo-unit of a file's ``if __name__ == "__main__":`` blocks: code that runs only when the
file is the command itself, so an entry of the command's own file only (``(own, MAIN_GUARD)``)."""


def _is_main_guard(node: ast.AST) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq) and len(t.comparators) == 1
            and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value == "__main__")


def _references(path: str, sha: str) -> dict[str, tuple[frozenset[str], frozenset[str], frozenset[str],
                                                         frozenset[str] | None, bool]]:
    """Per unit of a file (of content ``sha``): the global and builtin names its code looks up, the
    names it may reach another file's unit by (:func:`_names_not_strings`), the identifiers in its
    strings, the names its dynamic look-ups use (None: computed) and whether it lists a namespace;
    memoised by content, since a plan checks many records that imported the same files."""
    return _by_content(("references", sha), lambda: _compute_references(path, sha))


def _compute_references(path: str, sha: str) -> dict[str, tuple[frozenset[str], frozenset[str], frozenset[str],
                                                                 frozenset[str] | None, bool]]:
    out = {}
    units = dict(_parsed(path, sha)[0])
    if MODULE in units:  # ``if __name__ == "__main__":`` runs only in the command's own module
        units[MAIN_GUARD] = [n for n in units[MODULE] if _is_main_guard(n)]
        units[MODULE] = [n for n in units[MODULE] if not _is_main_guard(n)]
    for name, nodes in units.items():
        # every identifier inside a string: "package.module:function" names a function to a look-up
        strings = {w for node in nodes for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                   for w in _IDENTIFIER.findall(n.value)}
        lookups = _looked_up(nodes)
        out[name] = (frozenset(_global_names(nodes)), frozenset(_names_not_strings(nodes)), frozenset(strings),
                     None if lookups is None else frozenset(lookups), ENUMERATES in _mentions(nodes))
    return out


def reachable_units(files: Mapping[str, tuple[dict[str, list[ast.AST]], bool]], entries: Iterable[tuple[str, str]],
              root: str | Path) -> set[tuple[str, str]] | None:
    """The units ``(file, name)`` a run could have executed: its ``entries``, every unit that runs
    code at import (not :func:`_inert`: the ``"<module>"`` units among them, less their ``if
    __name__ == "__main__":`` blocks, :data:`MAIN_GUARD`), and every unit that such code names,
    transitively (the module docstring says how a name reaches a unit); None when that code lists
    a namespace (then everything is reachable).

    Args:
        files: per recorded library file (``"flprivacy/<path>.py"``), its units as today (the
            nodes of :func:`_units`) and whether it has ``from __future__ import annotations``.
        entries: ``(file, name)`` of the functions the run started from; ``(file, MAIN_GUARD)``
            for the ``__main__`` block of a command's own file.
        root: the directory that holds the ``flprivacy`` package.
    """
    root = Path(root)
    binders: dict[str, list[str]] = {}
    for rel, (units, _) in files.items():
        for u in units:
            binders.setdefault(u, []).append(rel)
    refs = {rel: _references(str(root / rel), _sha(root / rel)) for rel in files}
    starts = list(entries)
    for rel, (units, lazy) in files.items():
        starts += [(rel, u) for u, nodes in units.items() if u == MODULE or not _inert(nodes, rel, files, root, lazy)]
    every_string = False
    while True:
        seen: set[tuple[str, str]] = set()
        todo = list(starts)
        while todo:
            rel, u = todo.pop()
            if (rel, u) in seen or rel not in files or u not in refs[rel]:
                continue
            seen.add((rel, u))
            own, names, strings, lookups, lists = refs[rel][u]
            if lists:
                return None
            if lookups is None and not every_string:
                break  # a computed look-up: any string of the run's code may name a unit; start again so
            todo += [(rel, n) for n in own if n in files[rel][0]]
            for n in names | (strings if every_string else lookups or frozenset()):
                todo += [(g, n) for g in binders.get(n, ())]
        else:
            return seen
        every_string = True


def _judge_by_reach(parsed: dict, added: list[tuple[str, str]], exports: list[str],
                    changed: list[tuple[str, str, str]], opaque: list[str], entries: list[tuple[str, str]],
                    root: Path) -> tuple[bool, str]:
    """:func:`check_sources`' verdict for a run with entries and changed or added units: stale when
    the run can reach one of them (:func:`reachable_units`), a changed ``__all__`` or an added name
    matters to a star import, or an added name is a dunder Python itself reads."""
    first = changed[0][2] if changed else f"{added[0][0]}:{added[0][1]} added since the run"
    if opaque:  # a recorded file that does not parse: its code may name anything
        return False, f"{first}, and {opaque[0]} cannot be read for what the run reaches"
    reads_all = any(_reads_all(info[0], keep) for info, keep in parsed.values())
    if reads_all and exports:
        return False, exports[0]
    for rel, name in added:
        if reads_all and name != "__all__":
            return False, f"{rel}:{name} added since the run, and a recorded file star-imports or reads __all__"
        if name.startswith("__") and name.endswith("__") and name != "__all__":
            return False, f"{rel}:{name} added since the run (a module attribute Python itself reads)"
    reach = reachable_units({rel: (info[0], info[2]) for rel, (info, _) in parsed.items()}, entries, root)
    if reach is None:
        return False, f"{first}, and the run's code lists a namespace (vars, dir, ...)"
    for rel, name, why in changed:
        if (rel, name) in reach:
            return False, f"{why}, and the run can reach it"
    for rel, name in added:
        if name != "__all__" and (rel, name) in reach:
            return False, f"{rel}:{name} added since the run, and the run can reach it"
    return True, ""
