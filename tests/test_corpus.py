"""The corpus (tests/corpus): real faults from public reports, their fixed twins, and
working programs. A fault must be named with its expected code (at its expected place,
where one is given); a twin or a control must get no warning and no error.

Entries vizdebug does not handle yet are ``xfail(strict=True)`` with the reason measured
when they were marked (tests/corpus/gaps.py): the day one starts passing, its test fails
and the mark must go. Entries whose outcome depends on the machine's timing are
``xfail(strict=False)`` with how often they failed when measured.
"""

from __future__ import annotations

import warnings

import pytest

from tests.corpus import ENTRIES, FAULT, Entry
from tests.corpus.gaps import FLAKY, GAPS
from tests.corpus.run import alarms, named

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: steadier timing on shared CI cores
    yield
    torch.set_num_threads(before)


def _params():
    for entry in ENTRIES:
        marks = []
        if entry.name in GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=GAPS[entry.name]))
        elif entry.name in FLAKY:
            marks.append(pytest.mark.xfail(strict=False, reason=FLAKY[entry.name]))
        yield pytest.param(entry, id=entry.name, marks=marks)


def test_gaps_name_real_entries():
    names = {e.name for e in ENTRIES}
    assert sorted((set(GAPS) | set(FLAKY)) - names) == []
    assert set(GAPS).isdisjoint(FLAKY)


def test_corpus_size():
    faults = [e for e in ENTRIES if e.kind == FAULT]
    controls = [e for e in ENTRIES if e.kind == "control"]
    assert len(faults) >= 30 and len(controls) >= 10
    assert len({e.source for e in faults}) == len(faults)  # one report per fault


@pytest.mark.parametrize("entry", _params())
def test_entry(entry: Entry):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the programs' own torch warnings, as reported
        findings = entry.run()
    said = [str(f) for f in alarms(findings)]
    if entry.kind == FAULT:
        place = f" at {entry.where!r}" if entry.where else ""
        assert named(entry, findings), f"expected {entry.code}{place}; vizdebug said {said}"
    else:
        assert said == [], f"false alarm on a working program: {said}"
