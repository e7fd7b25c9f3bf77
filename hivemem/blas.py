"""One BLAS thread in every HiveMem process.

numpy's wheels link OpenBLAS, which starts a worker thread per core and, after each matrix product, keeps them
spinning for more work. HiveMem's products are small (the late reading's question word pieces against a hundred
rounds' in ``governance/kmms/late.py``, a round's token states projected in ``governance/token_states.py``): one
core does each in microseconds, and the spinning workers only take the cores that Postgres, the embedder and the
event loop need. Measured on a 2-vCPU EPYC serving LoCoMo's 1,532 questions (k = 50) through the API, one search
cost the API process 37.7-42.8 ms of CPU with OpenBLAS's own threads and 17.7-21.2 ms with one; on a new stack,
four callers at once were answered 41.7 searches a second against 51.3 (docs/performance.md, "2026-12-06: one
BLAS thread").

``threadpoolctl`` sets the limit on the libraries a process has loaded, so numpy is imported first.
"""

from __future__ import annotations


def one_blas_thread() -> None:
    """Limit the BLAS numpy links (OpenBLAS, or MKL in some builds) to one thread in this process."""
    import numpy  # noqa: F401  (loads the BLAS library, so that threadpoolctl finds it)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
