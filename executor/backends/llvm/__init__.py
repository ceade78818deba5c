"""LLVM backend (llvmlite): compiled filter -> group -> aggregate kernels for
stream pipelines and GROUP BY queries, with an adaptive controller.
See README.md beside this file.  ``backend`` implements the executor's Backend interface
(executor/backends/interface.py) and installs it when imported; it keeps its compiled
sinks in its own cache keyed by plan objects.  The executor never imports
this package except to install it (executor/engine.py)."""
