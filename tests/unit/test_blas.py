"""hivemem/blas.py: a HiveMem service's numpy multiplies on one BLAS thread, whatever the machine's cores."""

import json
import os
import subprocess
import sys

PROBE = """
import json
from threadpoolctl import threadpool_info
import numpy
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
from hivemem.blas import one_blas_thread
one_blas_thread()
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps([before, after]))
"""


def test_one_blas_thread_limits_numpys_blas_to_one_thread() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}  # the library's own default
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    before, after = json.loads(out.stdout)
    assert before, "numpy links no BLAS that threadpoolctl knows"
    assert after == [1] * len(before)
    if (os.cpu_count() or 1) > 1:
        assert max(before) > 1  # the limit is what changed it, not the machine
