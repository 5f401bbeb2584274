"""toposched: topology-aware HPC scheduling simulator.

The native core (``toposched._core``) is imported by the modules that use it (the
readers' normalize, the limits, the replay), not here: ``import toposched`` and its error
classes work even while the extension is being rebuilt.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import InputError, SimulationError, ToposchedError, TopologyError, TraceFormatError

__all__ = ["InputError", "SimulationError", "ToposchedError", "TopologyError", "TraceFormatError", "__version__"]
