"""A module-level cache, as kernel libraries keep compiled kernels or
tuned configurations: filled by the first test that needs an entry,
read by every later one in the same interpreter."""
_table = {}


def scale(n):
    """The entry for n, computed once."""
    if n not in _table:
        _table[n] = 2 * n
    return _table[n]
