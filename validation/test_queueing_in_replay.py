"""The queueing delay the replay's closed loop leaves out is as small as
docs/validation-network.md says ("The queueing delay the replay's closed loop leaves out"),
measured by validation/queueing_in_replay.py on LLNL Thunder's whole log at twice its node
counts on cab (fewer instants than the table: the same code, a smaller sample)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOPOSCHED_SHARED_DATA", REPO.parent / "shared" / "data"))
THUNDER = SHARED / "traces" / "LLNL-Thunder-2007-1.1-cln.swf.gz"
if not THUNDER.exists():
    pytest.fail(f"validation/test_queueing_in_replay.py needs {THUNDER} (../shared/data or TOPOSCHED_SHARED_DATA=DIR)", pytrace=False)

_spec = importlib.util.spec_from_file_location("queueing_in_replay", REPO / "validation" / "queueing_in_replay.py")
assert _spec is not None and _spec.loader is not None
qir = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qir)


@pytest.mark.parametrize("alloc", ["linear", "isolated"])
def test_omitted_queueing_term_is_small(alloc):
    result = qir.replay(THUNDER, "cab", ["scale:2"], alloc)
    scenarios = qir.running_scenarios(result, "cab", 6)
    assert len(scenarios) >= 4
    terms = np.concatenate([qir.queueing_terms(sc)[0] for sc in scenarios])  # also checks term == the result's `queueing`
    assert (terms >= -1e-12).all()  # queueing only ever adds
    if alloc == "isolated":
        assert np.abs(terms).max() < 1e-12  # no two jobs share a link: nothing to wait behind
    else:
        assert (terms > 1e-6).mean() > 0.2  # linear placements do share links...
        assert terms.mean() < 1e-3 and terms.max() < 1e-2  # ...and the omission stays below the docs' bounds
