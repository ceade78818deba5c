"""LLVM backend (llvmlite): compiled filter -> group -> aggregate kernels for
stream pipelines and GROUP BY queries, with an adaptive controller.
See docs/LLVM.md.  Entry points for the executor are in ``runtime``
(``stream_process``, ``stream_flush``, ``aggregate``) and ``explain``."""
