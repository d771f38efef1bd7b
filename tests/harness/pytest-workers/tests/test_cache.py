"""A polluter and its victim: test_corrupts leaves a wrong entry in the
module-level cache, which test_reads, after it in one interpreter, reads.
Each passes alone."""
import cache


def test_fills():
    assert cache.scale(3) == 6


def test_corrupts():
    assert cache.scale(4) == 8
    cache._table[4] = -1          # the bug: a stale entry left behind


def test_reads():
    assert cache.scale(4) == 8, "cache.scale(4) is %r" % cache.scale(4)


def test_plain():
    assert cache.scale(5) == 10
