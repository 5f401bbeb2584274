"""Write your own policies in Python; the Rust engine calls them during a run.

Two kinds, each a class you subclass:

* :class:`AllocationPolicy` chooses **which nodes** a job gets. Implement
  ``select(nodes, free)``: ``free`` is a NumPy array of the node ids you may use now
  (ascending; nodes held by running jobs and nodes reserved for a waiting job are already
  removed); return a list of exactly ``nodes`` distinct ids from it, or ``None`` when the
  job cannot start now. ``setup(fabric)`` is called once before the run with the
  :class:`toposched.topology.Fabric` (``fabric.leaf_of_node``, ``fabric.pod_of_leaf``...).
* :class:`QueueOrder` decides **who goes first**. Implement ``key(job_id, submit_s, nodes,
  walltime_s, now_s)``; at every pass the queue is sorted by it (smallest first; ties keep
  submit order), then the queue policy (FCFS, EASY, conservative) runs on that order.

Use them from the command line by import path::

    toposched simulate --trace LOG --system cab --alloc mypolicies:PackLeaves --out out/x
    toposched simulate --trace LOG --system cab --queue-order mypolicies:SmallFirst --out out/y

(the module must be importable: installed, or in the current directory), or from Python
by passing an instance: ``simulate(w, fabric, RunConfig(alloc=PackLeaves()))``.

Rules the engine enforces: a policy that raises, or returns a node that is busy, reserved,
not on the fabric, repeated, or the wrong number of nodes, stops the run with an error
naming the policy, the job size and what was wrong (``toposched.errors.SimulationError``).

Set ``fungible = True`` on an allocation policy when any free nodes serve a job equally
well for *feasibility* (your policy can place a job whenever enough nodes are free):
queue policies then reserve node counts, as for ``linear``. Otherwise (default) EASY and
conservative reservations are node sets found by calling your ``select`` on projected
machine states, which costs more calls.

Example (tested by tests/test_policies.py and docs/python-policies.md):

>>> import numpy as np
>>> class FewestLeaves(AllocationPolicy):
...     '''Fill the leaves with the most free nodes first.'''
...     fungible = True
...     def setup(self, fabric):
...         self.leaf_of = fabric.leaf_of_node
...     def select(self, nodes, free):
...         if len(free) < nodes:
...             return None
...         leaves, counts = np.unique(self.leaf_of[free], return_counts=True)
...         order = leaves[np.argsort(-counts, kind="stable")]
...         rank = np.empty(self.leaf_of.max() + 1, int); rank[order] = np.arange(len(order))
...         return free[np.argsort(rank[self.leaf_of[free]], kind="stable")][:nodes].tolist()
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Sequence

import numpy as np

from .errors import ToposchedError


class AllocationPolicy:
    """Base class of allocation policies written in Python (see the module docstring)."""

    #: Name shown in summaries and errors (default: the class name).
    name: str | None = None
    #: True if the policy can place a job whenever enough nodes are free.
    fungible: bool = False

    def setup(self, fabric: Any) -> None:
        """Called once before the run with the :class:`toposched.topology.Fabric`."""

    def select(self, nodes: int, free: np.ndarray) -> Sequence[int] | None:
        """Return ``nodes`` distinct ids taken from ``free``, or None to make the job wait."""
        raise NotImplementedError

    def fits_ever(self, nodes: int) -> bool | str:
        """Could a job of ``nodes`` nodes ever be placed (on an empty machine)? Return True,
        or False / a reason string; such jobs are reported and skipped. Default: always
        True (the engine still skips jobs larger than the machine)."""
        return True


class QueueOrder:
    """Base class of queue orders written in Python (see the module docstring)."""

    def setup(self, fabric: Any) -> None:
        """Called once before the run."""

    def key(self, job_id: int, submit_s: int, nodes: int, walltime_s: int, now_s: int) -> Any:
        """A sort key; the smallest goes first. Ties keep submit order."""
        raise NotImplementedError


def load_policy(spec: str) -> Any:
    """Instantiate ``"package.module:ClassName"`` (no arguments)."""
    cls = _load_target(spec)
    attr = spec.partition(":")[2]
    try:
        obj = cls()
    except Exception as exc:  # a user's constructor: report, do not crash
        raise ToposchedError(f"policy {spec!r}: creating it failed: {exc!r}") from None
    if obj is None or isinstance(obj, (str, bytes, int, float, type)):
        # "mod:some_function" returning a string was then run as the built-in of that name
        raise ToposchedError(f"policy {spec!r}: {attr}() gave {type(obj).__name__} {obj!r:.60}, not a policy object; name a class (docs/python-policies.md)")
    return obj


#: What each kind of policy written in Python must have: its method, the method's
#: arguments, and the command-line flag that takes it.
_KINDS = {"select": ("nodes, free", "--alloc", "an allocation policy"), "key": ("job_id, submit_s, nodes, walltime_s, now_s", "--queue-order", "a queue order")}


def check_loads(spec: str, method: str) -> None:
    """What running ``spec`` (``module:Class``) would be refused for at once, found without
    making the object: the module imports, holds the name, and a class has ``method``
    (``"select"`` or ``"key"``). Commands call it before they read the log, so a typo stops
    them there, not after a long read (or, in compare, in every run)."""
    target = _load_target(spec)
    if isinstance(target, type):
        check_methods(target, method, _KINDS[method][0], spec=spec)


def check_python_policies(allocs: Sequence[Any], queue_order: Any = None) -> None:
    """:func:`check_loads` on every ``module:Class`` of ``allocs`` and on ``queue_order``
    (built-in names and objects pass): what a command checks before it reads the log."""
    for alloc in allocs:
        if isinstance(alloc, str) and ":" in alloc:
            check_loads(alloc, "select")
    if isinstance(queue_order, str) and ":" in queue_order:
        check_loads(queue_order, "key")


def _load_target(spec: str) -> Any:
    """The object ``"package.module:Name"`` names (the module imported from the current
    directory too), or one clear error."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ToposchedError(f"policy {spec!r}: expected module:ClassName, e.g. mypolicies:PackLeaves")
    # Like `python -m`, look in the current directory too: a user's policy file sits there.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ToposchedError(f"policy {spec!r}: cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module failed as it ran: theirs to fix, not a bug here
        raise ToposchedError(f"policy {spec!r}: importing module {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ToposchedError(f"policy {spec!r}: module {module_name!r} has no {attr!r}") from None


def resolve(policy: Any, fabric: Any) -> Any:
    """A built-in name stays a string; ``module:Class`` or an instance becomes a set-up object."""
    if isinstance(policy, str) and ":" not in policy:
        return policy
    if isinstance(policy, type):
        # RunConfig(alloc=FewLeaves): the class, not an instance; its setup() then failed
        # as "missing 1 required positional argument: 'fabric'" under the name builtins:type
        raise ToposchedError(f"policy {policy.__module__}:{policy.__qualname__}: pass an instance, {policy.__qualname__}(), not the class")
    obj = load_policy(policy) if isinstance(policy, str) else policy
    setup = getattr(obj, "setup", None)
    if callable(setup):
        try:
            setup(fabric)
        except Exception as exc:  # a user's setup: report it as theirs, not as a bug here
            raise ToposchedError(f"policy {describe(obj)}: setup(fabric) raised {type(exc).__name__}: {exc}") from None
    return obj


def check_methods(policy: Any, method: str, signature: str, *, spec: str | None = None) -> None:
    """Refuse a policy written in Python that lacks the method the engine calls, or (an
    allocation policy) whose ``name``, ``fungible`` or ``fits_ever`` the engine cannot
    read (the binding's TypeError would read as a bug in toposched). ``policy`` may be
    the class (``spec`` its ``module:Class``): then only its methods are checked."""
    is_class = isinstance(policy, type)
    name = spec if is_class else describe(policy)
    if not isinstance(policy, str) and not callable(getattr(policy, method, None)):
        # the other kind's method: the class went to the other flag
        other = next(((m, flag, kind) for m, (_, flag, kind) in _KINDS.items() if m != method and callable(getattr(policy, m, None))), None)
        given_to = f"; it has {other[0]}(): {other[2]}, which {other[1]} takes" if other else ""
        raise ToposchedError(f"policy {name}: has no {method}({signature}) method{given_to} (docs/python-policies.md)")
    base = {"select": AllocationPolicy, "key": QueueOrder}.get(method)
    cls = policy if is_class else type(policy)
    if base is not None and issubclass(cls, base) and getattr(cls, method, None) is getattr(base, method):
        # the base class's own method: the run stopped at the first call with a bare
        # "raised NotImplementedError" and a traceback into this module
        raise ToposchedError(f"policy {name}: does not define {method}({signature}), which {base.__name__} leaves to subclasses (docs/python-policies.md)")
    if method == "select" and not isinstance(policy, str) and not is_class:
        # what the engine reads from the object: a wrong type was a bare TypeError ("'int'
        # object cannot be converted to 'PyString'"), an internal error on the command
        # line; a fits_ever that is no method skipped every job as "fits_ever raised"
        name = getattr(policy, "name", None)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            # "" named it nothing in the engine's errors ("allocation policy : select...")
            raise ToposchedError(f"policy {describe_type(policy)}: its name must be a non-empty string or None, got {name!r}")
        fungible = getattr(policy, "fungible", False)
        if not isinstance(fungible, (bool, np.bool_)):
            raise ToposchedError(f"policy {describe(policy)}: fungible must be True or False, got {fungible!r}")
        if hasattr(policy, "fits_ever") and not callable(policy.fits_ever):
            raise ToposchedError(f"policy {describe(policy)}: fits_ever must be a method fits_ever(nodes), got {policy.fits_ever!r}")


def describe_type(policy: Any) -> str:
    """``module:Class`` of a policy object."""
    return f"{type(policy).__module__}:{type(policy).__qualname__}"


def describe(policy: Any) -> str | None:
    """How a policy is named in a summary (None for no policy)."""
    if policy is None or isinstance(policy, str):
        return policy
    return getattr(policy, "name", None) or f"{type(policy).__module__}:{type(policy).__qualname__}"
