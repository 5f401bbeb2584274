"""The policy registry as the Rust core declares it (``_core.policies()``).

Every queue and allocation policy is one Rust file declaring its name, summary, options
(a serde/schemars struct whose field doc comments are the option docs) and builder;
``build.rs`` collects them. This module turns that into what the Python front needs: the
names ``--queue``/``--alloc`` accept, one CLI flag per option (``leaf_order`` ->
``--leaf-order``), the choices sweeps validate against, and the catalogue of
docs/policies.md. Nothing here lists a policy by name.

>>> "easy" in queue_names(), "isolated" in alloc_names()
(True, True)
>>> option("leaf_order").flag, option("leaf_order").policy, option("leaf_order").choices
('--leaf-order', 'isolated', ('flux-topo', 'paper'))
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

from . import _core
from .errors import ToposchedError


@dataclass(frozen=True)
class PolicyOption:
    """One option of one policy."""

    name: str
    #: The policy that declares it (option names are unique across policies).
    policy: str
    #: ``"queue"`` or ``"alloc"``.
    kind: str
    description: str
    default: Any
    #: JSON type: ``"boolean"``, ``"integer"``, ``"number"`` or ``"string"``.
    type: str
    #: The accepted values of an enumerated option, else None.
    choices: tuple[str, ...] | None = None
    #: Smallest accepted value of an integer option, else None.
    minimum: int | None = None
    #: Largest accepted value of an integer option (the schema's ``maximum``, else what its
    #: Rust type holds: 2^32 - 1 for a ``u32``), else None. Checked where the value is
    #: read, so that a value too large is refused naming its flag, not by the engine.
    maximum: int | None = None
    #: A number option's range, as its schema gives it (``assumed_phi``: 0 to 1), else None.
    number_minimum: float | None = None
    number_maximum: float | None = None

    @property
    def flag(self) -> str:
        """The CLI flag: ``--`` and the name in kebab case."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Policy:
    """A registered policy."""

    name: str
    kind: str
    summary: str
    doc: str
    options: tuple[PolicyOption, ...]
    #: Allocation policies only (None for queue policies).
    fungible: bool | None = None
    topology_aware: bool | None = None
    #: ``"module:Class"`` of a policy written in Python (registered with :func:`register`
    #: or the ``toposched.policies`` entry point group); None for the core's policies.
    python: str | None = None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _option(name: str, prop: Mapping[str, Any], defs: Mapping[str, Any], policy: str, kind: str) -> PolicyOption:
    target: Mapping[str, Any] = prop
    if "$ref" in prop:
        target = defs[str(prop["$ref"]).rsplit("/", 1)[-1]]
    choices: tuple[str, ...] | None = None
    if "oneOf" in target:
        choices = tuple(str(v["const"]) for v in target["oneOf"])
        typ = "string"
    elif "enum" in target:
        choices = tuple(str(v) for v in target["enum"])
        typ = "string"
    else:
        raw = target.get("type", "string")
        # an optional value (Option<T>) is ["integer", "null"]: its type is T's
        typ = str(next((t for t in raw if t != "null"), "string") if isinstance(raw, list) else raw)
    minimum = target.get("minimum")
    maximum = target.get("maximum", _FORMAT_MAXIMUM.get(str(target.get("format", ""))))
    return PolicyOption(
        name=name,
        policy=policy,
        kind=kind,
        description=_one_line(str(prop.get("description", ""))),
        default=prop.get("default"),
        type=typ,
        choices=choices,
        minimum=int(minimum) if minimum is not None else None,
        maximum=int(maximum) if maximum is not None and typ == "integer" else None,
        number_minimum=float(minimum) if minimum is not None and typ == "number" else None,
        number_maximum=float(maximum) if maximum is not None and typ == "number" else None,
    )


#: The largest value of each integer ``format`` schemars gives a Rust integer type.
_FORMAT_MAXIMUM = {
    "uint8": 2**8 - 1,
    "uint16": 2**16 - 1,
    "uint32": 2**32 - 1,
    "uint64": 2**64 - 1,
    "uint": 2**64 - 1,
    "int8": 2**7 - 1,
    "int16": 2**15 - 1,
    "int32": 2**31 - 1,
    "int64": 2**63 - 1,
    "int": 2**63 - 1,
}


def check_integer(o: PolicyOption, value: int) -> str | None:
    """Why ``value`` is not a value of the integer option ``o`` (out of its range), else None."""
    if o.minimum is not None and value < o.minimum:
        return f"must be at least {o.minimum}, got {value}"
    if o.maximum is not None and value > o.maximum:
        return f"must be at most {maximum_text(o.maximum)}, got {value}"
    return None


def check_number(o: PolicyOption, value: float) -> str | None:
    """Why ``value`` is not a value of the number option ``o`` (not finite, or outside the
    schema's ``minimum`` and ``maximum``), else None."""
    if not math.isfinite(value):
        return f"expected a finite number, got {value}"
    if o.number_minimum is not None and value < o.number_minimum:
        return f"must be at least {o.number_minimum:g}, got {value:g}"
    if o.number_maximum is not None and value > o.number_maximum:
        return f"must be at most {o.number_maximum:g}, got {value:g}"
    return None


def check_type(o: PolicyOption, value: Any) -> str | None:
    """Why ``value`` is not of the type of option ``o`` (its JSON type), else None: a
    ``policy_options`` value of the wrong type (``priority_weight_age=1.5``,
    ``bf_continue="no"``) was refused by the engine as "settings: slurm: invalid type:
    floating point `1.5`, expected i64", naming neither the option nor its flag."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()  # np.int64(5) from np.arange: taken by the engine
    want = {
        "integer": ("a whole number", isinstance(value, int) and not isinstance(value, bool)),
        "number": ("a number", isinstance(value, (int, float)) and not isinstance(value, bool)),
        "boolean": ("true or false", isinstance(value, bool)),
        "string": ("a string", isinstance(value, str)),
    }.get(o.type)
    if want is None or want[1]:
        return None
    return f"expected {want[0]}, got {value!r} ({type(value).__name__})"


def maximum_text(maximum: int) -> str:
    """A largest value as messages write it: ``2^32 - 1`` for a type's limit, else the number."""
    bits = (maximum + 1).bit_length() - 1
    return f"2^{bits} - 1" if maximum > 1 and maximum + 1 == 2**bits else str(maximum)


#: Allocation policies written in Python, registered in this process (name -> entry).
_PYTHON: dict[str, Policy] = {}


def register(target: str, *, name: str | None = None, summary: str | None = None) -> Policy:
    """Register an allocation policy written in Python (``"module:Class"``, an
    ``AllocationPolicy``, docs/python-policies.md) under a name: ``--alloc NAME``, compare,
    sweeps and the catalogue then take it like a built-in. Packages can register theirs
    without code through the entry point group ``toposched.policies`` (``NAME =
    "module:Class"``). The class is imported here, so a bad target fails now."""
    return _register(target, name, summary, from_entry_point=False)


def _register(target: str, name: str | None, summary: str | None, *, from_entry_point: bool) -> Policy:
    from .errors import InputError
    from .policies import load_policy

    if not isinstance(target, str):
        # register(FewLeaves()) ended in AttributeError: 'FewLeaves' object has no attribute 'partition'
        raise InputError("policy", f"register() takes the policy's import path 'module:Class' (so that worker processes can import it), got {type(target).__name__} {target!r:.60}")
    obj = load_policy(target)
    cls = obj if isinstance(obj, type) else type(obj)
    if not callable(getattr(obj, "select", None)):
        # a QueueOrder (or anything without select) was registered as an allocation policy
        # and failed only in the runs naming it
        raise InputError("policy", f"{target}: has no select(nodes, free) method; only allocation policies (AllocationPolicy, docs/python-policies.md) are registered")
    name = name or getattr(cls, "name", None) or cls.__name__
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        # a comma splits compare's --allocs, a space a sweep's list; ':' means module:Class
        raise InputError("policy", f"{target}: a registered policy needs a name of letters, digits, '-', '_' and '.' (got {name!r})")
    if name == "as-logged" or any(p.name == name for p in _core_policies()):
        # as-logged is no registry policy but is taken before it: the policy never ran
        raise InputError("policy", f"{target}: {name!r} is the name of a built-in policy")
    taken = _PYTHON.get(name)
    if taken is not None and taken.python != target and not _from_entry_point.get(name, False):
        # the first was replaced without a word: runs naming it ran the second
        raise InputError("policy", f"{target}: {name!r} is already the name of {taken.python}; unregister({name!r}) first, or give another name")
    doc = (cls.__doc__ or "").strip()
    entry = Policy(
        name=name,
        kind="alloc",
        summary=summary or (doc.splitlines()[0].rstrip(".") if doc else f"allocation policy {target} (Python)"),
        doc=doc,
        options=(),
        fungible=bool(getattr(cls, "fungible", False)),
        topology_aware=True,
        python=target,
    )
    _PYTHON[name] = entry
    _from_entry_point[name] = from_entry_point
    return entry


#: Entry points of the group ``toposched.policies`` that could not be registered (warned once).
_BROKEN_ENTRY_POINTS: set[str] = set()
#: Whether each name of ``_PYTHON`` came from an installed entry point (a call of
#: :func:`register` may name another class under it: the caller's choice wins).
_from_entry_point: dict[str, bool] = {}


def unregister(name: str) -> None:
    """Forget a policy registered with :func:`register` (tests)."""
    _PYTHON.pop(name, None)
    _from_entry_point.pop(name, None)


@functools.cache
def _entry_point_policies() -> tuple[tuple[str, str], ...]:
    from importlib.metadata import entry_points

    return tuple((ep.name, ep.value) for ep in entry_points(group="toposched.policies"))


def policies() -> tuple[Policy, ...]:
    """Every registered policy: the core's (queue policies, then allocation policies, in
    file-name order), then allocation policies written in Python."""
    for ep_name, target in _entry_point_policies():
        if ep_name not in _PYTHON and ep_name not in _BROKEN_ENTRY_POINTS:
            try:
                _register(target, ep_name, None, from_entry_point=True)
            except ToposchedError as exc:
                # one installed package's bad entry point (a built-in's name, a module that
                # fails to import) stopped every command that lists the policies, simulate
                # --help and compare among them, with an error that did not say where it came from
                _BROKEN_ENTRY_POINTS.add(ep_name)
                warnings.warn(f"the installed entry point '{ep_name} = {target}' (group toposched.policies) is left out: {exc}", stacklevel=2)
    return _core_policies() + tuple(_PYTHON.values())


def python_target(name: str) -> str | None:
    """``module:Class`` of a registered Python policy, else None."""
    p = policy(name)
    return p.python if p is not None else None


@functools.cache
def _core_policies() -> tuple[Policy, ...]:
    """The core's policies (``_core.policies()``)."""
    out = []
    for p in _core.policies():
        schema = p["options"]
        defs = schema.get("$defs", {})
        opts = tuple(_option(n, prop, defs, p["name"], p["kind"]) for n, prop in schema.get("properties", {}).items())
        out.append(
            Policy(
                name=p["name"],
                kind=p["kind"],
                summary=p["summary"],
                doc=p["doc"],
                options=opts,
                fungible=p["fungible"],
                topology_aware=p["topology_aware"],
            )
        )
    return tuple(out)


def core_policies() -> tuple[Policy, ...]:
    """The core's policies only: what a run of a built-in policy needs, without looking
    for the Python ones packages register (reading every installed package's entry
    points and importing importlib.metadata: 40-50 ms of a command's start-up)."""
    return _core_policies()


def policy(name: str) -> Policy | None:
    # the core's first: a Python policy never takes a built-in's name (register refuses it)
    return next((p for p in _core_policies() if p.name == name), None) or next((p for p in policies() if p.name == name), None)


def queue_names() -> tuple[str, ...]:
    return tuple(p.name for p in _core_policies() if p.kind == "queue")  # Python policies allocate


def alloc_names() -> tuple[str, ...]:
    return tuple(p.name for p in policies() if p.kind == "alloc")


def options() -> tuple[PolicyOption, ...]:
    """Every option of every policy (the core's: a policy written in Python has none)."""
    return tuple(o for p in _core_policies() for o in p.options)


def option(name: str) -> PolicyOption | None:
    return next((o for o in options() if o.name == name), None)


def options_of(names: tuple[str | None, ...] | list[str | None]) -> tuple[PolicyOption, ...]:
    """The options of the named policies (names not registered, such as ``module:Class``
    or ``as-logged``, have none)."""
    wanted = set(n for n in names if isinstance(n, str))
    return tuple(o for o in options() if o.policy in wanted)


def topology_aware(alloc: str) -> bool:
    """Whether placement depends on the fabric (the speedup scenarios apply). Policies
    written in Python count as aware; ``as-logged`` does not."""
    p = policy(alloc)
    if p is not None:
        return bool(p.topology_aware)
    return alloc != "as-logged"


#: docs/policies.md holds the generated catalogue between these lines.
DOCS_BEGIN = "<!-- generated from _core.policies() by `python -m toposched.registry docs/policies.md`; do not edit -->"
DOCS_END = "<!-- end of generated catalogue -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def catalogue_markdown() -> str:
    """The registry as Markdown: every policy, its flags and options (docs/policies.md;
    tests/test_registry.py fails when the file drifts from it)."""
    lines = [DOCS_BEGIN, "", "## Registered policies and options", ""]
    lines.append(
        "Every policy below is one Rust file declaring `pub static POLICY` (ARCHITECTURE.md, "
        "\"Adding a policy\"). An option belongs to one policy and is the CLI flag shown; giving "
        "it with a run that does not use its policy is an error naming the policy. In a sweep's "
        "`[run]` table, or `RunConfig`, it is the option name."
    )
    for kind, title in (("queue", "Queue policies (`--queue`)"), ("alloc", "Allocation policies (`--alloc`)")):
        lines += ["", f"### {title}", ""]
        for p in _core_policies():  # the core's only: Python ones depend on what is installed
            if p.kind != kind:
                continue
            flags = ""
            if kind == "alloc":
                flags = " Reservations: " + ("node counts (fungible)." if p.fungible else "node sets (not fungible).")
                flags += " Speedup scenarios: " + ("apply (topology-aware)." if p.topology_aware else "do not apply (topology-oblivious).")
            lines.append(f"- **`{p.name}`**: {p.summary}.{flags}")
            for o in p.options:
                values = " \\| ".join(f"`{c}`" for c in o.choices) if o.choices else o.type
                default = str(o.default).lower() if isinstance(o.default, bool) else o.default
                lines.append(f"  - `{o.flag}` ({values}; default `{default}`): {o.description}")
    lines += ["", DOCS_END]
    return "\n".join(lines) + "\n"


def docs_with_catalogue(text: str) -> str:
    """``text`` (docs/policies.md) with its generated block replaced by the current one."""
    if DOCS_BEGIN not in text or DOCS_END not in text:
        return text.rstrip("\n") + "\n\n" + catalogue_markdown()
    head, rest = text.split(DOCS_BEGIN, 1)
    _, tail = rest.split(DOCS_END, 1)
    return head + catalogue_markdown() + tail.lstrip("\n")


if __name__ == "__main__":  # python -m toposched.registry docs/policies.md
    import sys
    from pathlib import Path

    target = Path(sys.argv[1])
    target.write_text(docs_with_catalogue(target.read_text()))
