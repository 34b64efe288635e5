"""The type stub python/cuckoo/_core.pyi matches the runtime: same names, same kinds (method,
property, static/class method), same parameter names and kinds. A drift in either direction fails."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
from typing import Dict, List, Tuple

import pytest

import cuckoo
from cuckoo import _core

STUB = pathlib.Path(cuckoo.__file__).with_name("_core.pyi")

# Dunders that are ours (defined by the binding or installed by the package); the rest come
# from `object` or pybind11 and are not part of the API.
OUR_DUNDERS = {
    "__init__", "__contains__", "__len__", "__eq__", "__ne__", "__or__", "__ior__", "__add__", "__iadd__", "__and__", "__iand__", "__copy__",
    "__deepcopy__", "__reduce__", "__hash__",
}


def stub_tree() -> ast.Module:
    assert STUB.exists(), "the stub must be installed with the package"
    return ast.parse(STUB.read_text(encoding="utf-8"))


def stub_class(name: str) -> ast.ClassDef:
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"class {name} missing from the stub")


# The compiled classes the stub describes member by member.
CLASSES = ("Filter", "_Store", "_KeySet", "_Window")


def stub_members(cls: str = "Filter") -> Dict[str, Tuple[str, List[str]]]:
    """name -> (kind, parameter names without self/cls)."""
    members: Dict[str, Tuple[str, List[str]]] = {}
    for node in stub_class(cls).body:
        if isinstance(node, ast.FunctionDef):
            decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
            kind = ("property" if "property" in decorators else "staticmethod" if "staticmethod" in decorators
                    else "classmethod" if "classmethod" in decorators else "method")
            args = node.args
            names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            if kind in ("method", "property", "classmethod"):
                names = names[1:]
            if args.vararg:
                names.append("*" + args.vararg.arg)
            members[node.name] = (kind, names)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members[node.target.id] = ("attribute", [])
    return members


def runtime_members(cls: str = "Filter") -> Dict[str, Tuple[str, List[str]]]:
    members: Dict[str, Tuple[str, List[str]]] = {}
    for name, raw in vars(getattr(_core, cls)).items():
        if name.startswith("__") and name not in OUR_DUNDERS:
            continue
        if name.startswith("_pybind11"):
            continue
        if type(raw).__name__ == "wrapper_descriptor":  # pybind11's own slot (e.g. __init__ of a class
            continue                                    # with no constructor: "No constructor defined")
        if isinstance(raw, property):
            members[name] = ("property", [])
        elif isinstance(raw, staticmethod):
            members[name] = ("staticmethod", parameters(raw.__func__, skip_self=False))
        elif isinstance(raw, classmethod):
            members[name] = ("classmethod", parameters(raw.__func__, skip_self=True))
        elif raw is None:
            members[name] = ("attribute", [])
        elif callable(raw):
            # pybind11 static methods are plain builtins in the class dict
            is_static = type(raw).__name__ == "builtin_function_or_method"
            members[name] = ("staticmethod" if is_static else "method", parameters(raw, skip_self=not is_static))
    return members


def parameters(func: object, skip_self: bool) -> List[str]:
    try:
        sig = inspect.signature(func)  # type: ignore[arg-type]
        names = []
        for p in sig.parameters.values():
            names.append("*" + p.name if p.kind is p.VAR_POSITIONAL else p.name)
    except (TypeError, ValueError):
        # pybind11: the first docstring line is "name(self: T, key: object, *, x: int = 4) -> R"
        first = (getattr(func, "__doc__", "") or "").splitlines()[0]
        inside = first[first.index("(") + 1 : first.rindex(")")]
        names = []
        depth = 0
        current = ""
        for ch in inside + ",":
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            if ch == "," and depth == 0:
                token = current.strip()
                current = ""
                if token and token != "*":
                    names.append(re.split(r"[:=]", token)[0].strip())
            else:
                current += ch
        names = ["*" + n[1:] if n.startswith("*") else n for n in names]
    return names[1:] if skip_self and names else names


@pytest.mark.parametrize("cls", CLASSES)
def test_every_runtime_member_is_in_the_stub_and_back(cls):
    stub, runtime = stub_members(cls), runtime_members(cls)
    assert sorted(set(runtime) - set(stub)) == [], "in the runtime but not in the stub"
    assert sorted(set(stub) - set(runtime)) == [], "in the stub but not in the runtime"


@pytest.mark.parametrize("cls, name", [(c, n) for c in CLASSES for n in sorted(stub_members(c))])
def test_kind_and_parameters_match(cls, name):
    stub_kind, stub_params = stub_members(cls)[name]
    runtime_kind, runtime_params = runtime_members(cls)[name]
    assert stub_kind == runtime_kind
    if stub_kind != "property" and name != "__hash__":
        assert stub_params == runtime_params


def test_exceptions_match():
    tree = stub_tree()
    classes = {n.name: [ast.unparse(b) for b in n.bases] for n in tree.body if isinstance(n, ast.ClassDef)}
    runtime = {name for name in dir(_core) if isinstance(getattr(_core, name), type)
               and issubclass(getattr(_core, name), BaseException)}
    assert runtime == {n for n in classes if n not in CLASSES}
    for name in runtime:
        bases = [b.__name__ for b in getattr(_core, name).__bases__]
        assert bases == classes[name], name


def test_package_is_typed():
    assert pathlib.Path(cuckoo.__file__).with_name("py.typed").exists()
