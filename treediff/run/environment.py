"""What the ``treediff`` command sets in its own environment, and how engines get the user's environment back.

numpy's bundled OpenBLAS starts one thread per core when numpy is imported, and each thread busy-waits for a
while for work. treediff never gives it any (it makes no BLAS calls). On the 2-core machines measured this
cost about 0.1-0.2 CPU-s of every command that imports numpy: `treediff info` of a small log took 0.70 CPU-s
and 0.59 s with those threads, 0.49 CPU-s and 0.49 s without (docs/PERFORMANCE.md, "fifth session").
:func:`quiet_blas` asks OpenBLAS for one thread. It must run before numpy is imported, so the command line
calls it first.

The setting goes to the processes treediff starts: the SAN worker and batch workers, which are treediff too.
An engine must not get it. An engine with a BLAS backend (a network evaluation) would then search with one
thread. :func:`user_environment` therefore takes it back out of an engine's environment. The marker
variable carries the fact across processes: a batch worker also starts engines.

This module imports nothing heavy: the command line imports it before it knows the command.
"""
from __future__ import annotations

import os
from typing import Mapping, MutableMapping

#: The variable OpenBLAS reads for its thread count when it is loaded.
BLAS_THREADS = "OPENBLAS_NUM_THREADS"
#: Set (to "1") when treediff set :data:`BLAS_THREADS` itself; absent when the user set it.
SET_BY_TREEDIFF = "TREEDIFF_SET_OPENBLAS_NUM_THREADS"


def quiet_blas(environ: MutableMapping[str, str] | None = None) -> None:
    """One OpenBLAS thread, unless the user chose a count (``OPENBLAS_NUM_THREADS`` already set)."""
    env = os.environ if environ is None else environ
    if BLAS_THREADS not in env:
        env[BLAS_THREADS] = "1"
        env[SET_BY_TREEDIFF] = "1"


def user_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment as the user gave it: without what :func:`quiet_blas` added."""
    env = dict(os.environ if environ is None else environ)
    if env.pop(SET_BY_TREEDIFF, None) is not None:
        env.pop(BLAS_THREADS, None)
    return env
