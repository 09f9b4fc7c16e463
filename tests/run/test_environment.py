"""The command line asks numpy's OpenBLAS for one thread; engines get the user's environment back."""
import dataclasses

import pytest

from tests.support.runner_helpers import fake_spec
from treediff.run.environment import BLAS_THREADS, SET_BY_TREEDIFF, quiet_blas, user_environment
from treediff.run.search import _engine_env


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(BLAS_THREADS, raising=False)
    monkeypatch.delenv(SET_BY_TREEDIFF, raising=False)
    return monkeypatch


def test_one_thread_unless_the_user_chose(clean_env):
    env = {"PATH": "/bin"}
    quiet_blas(env)
    assert env == {"PATH": "/bin", BLAS_THREADS: "1", SET_BY_TREEDIFF: "1"}
    assert user_environment(env) == {"PATH": "/bin"}
    mine = {BLAS_THREADS: "4"}
    quiet_blas(mine)
    assert mine == {BLAS_THREADS: "4"}  # the user's count, and no marker
    assert user_environment(mine) == {BLAS_THREADS: "4"}


def test_quiet_blas_twice_keeps_the_marker(clean_env):
    env: dict[str, str] = {}
    quiet_blas(env)
    quiet_blas(env)  # (a treediff process started by treediff: the batch workers)
    assert user_environment(env) == {}


def test_an_engine_does_not_get_the_setting(clean_env):
    quiet_blas()
    import os

    assert os.environ[BLAS_THREADS] == "1"
    env = _engine_env(fake_spec())
    assert BLAS_THREADS not in env and SET_BY_TREEDIFF not in env
    assert env["PATH"] == os.environ["PATH"]


def test_an_engine_keeps_the_users_or_its_own_setting(clean_env):
    clean_env.setenv(BLAS_THREADS, "3")
    quiet_blas()
    assert _engine_env(fake_spec())[BLAS_THREADS] == "3"
    spec = fake_spec()
    spec = dataclasses.replace(spec, env=((BLAS_THREADS, "8"),))
    assert _engine_env(spec)[BLAS_THREADS] == "8"  # engines.toml's env wins
