"""treediff.store.source.read_ahead: items built on a thread one ahead of the consumer (ParquetSource's batches)."""
from __future__ import annotations

import threading
import time

import pytest

from treediff.model.errors import InputError
from treediff.store.source import read_ahead


def test_items_arrive_in_order_and_all_of_them():
    assert list(read_ahead(iter(range(7)))) == [0, 1, 2, 3, 4, 5, 6]
    assert list(read_ahead(iter([]))) == []


def test_the_next_item_is_built_while_the_consumer_holds_one_and_no_further():
    started: list[int] = []

    def produce():
        for i in range(5):
            started.append(i)
            yield i

    got = read_ahead(produce())
    assert next(got) == 0
    time.sleep(0.2)  # the thread has had time to run ahead as far as it may
    # item 1 built (it waits for the consumer); item 2 not started: two items alive at most
    assert started == [0, 1]
    assert next(got) == 1
    time.sleep(0.2)
    assert started == [0, 1, 2]
    assert list(got) == [2, 3, 4]


def test_an_error_producing_an_item_reaches_the_consumer_in_its_place():
    def produce():
        yield 1
        raise InputError("records.parquet: not a readable Parquet records file")

    got = read_ahead(produce())
    assert next(got) == 1
    with pytest.raises(InputError, match="records.parquet"):
        next(got)


def test_a_consumer_that_stops_early_stops_the_thread_and_closes_the_items():
    closed = threading.Event()
    started: list[int] = []

    def produce():
        try:
            for i in range(1000):
                started.append(i)
                yield i
        finally:
            closed.set()

    before = threading.active_count()
    got = read_ahead(produce())
    assert next(got) == 0
    got.close()  # what a `for` loop left by an exception does to the generator
    assert closed.is_set()
    assert threading.active_count() == before
    assert len(started) <= 3
