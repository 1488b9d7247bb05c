"""The phases of a training step and the verl worker method that runs each, named once for all sides.

The launcher reads them in a remote traceback to name the phase that ran out of memory (launcher/failures/out_of_memory.py);
the plugin wraps the same methods in the worker processes (plugin/phase_calls.py): the heap trim after each update,
the tests' out-of-memory injection and step hold before a call.
"""

from __future__ import annotations

# The worker method (as it appears in the remote traceback) that runs each phase, in the order a step runs them.
PHASE_METHODS = {
    "rollout": "generate",
    "old_log_prob": "compute_log_prob",
    "ref": "compute_ref_log_prob",
    "update_actor": "update_actor",
}
