"""Execution backends behind one interface (``interface``): the numpy
vectorised path is the operators' own code, and the LLVM backend (``llvm``)
installs itself behind the interface and keeps its compiled kernels in its own
structures keyed by plan, never on the operators."""
