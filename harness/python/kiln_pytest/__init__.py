"""kiln's pytest support: each pytest test in its own process under kiln.

`kiln run --pytest PATH` lists a project's tests through this package
(`python3 -m kiln_pytest collect`), runs each node id in a process of its
own (`python3 -m kiln_pytest run`), directly or forked from a zygote that
imported the test modules' heavy dependencies once. docs/pytest.md.
"""

__all__ = ["fork_unsafe"]

# Why forking this process is unsafe, when something said so.
_unsafe = []


def fork_unsafe(reason):
    """Says that this process holds something a forked child must not
    inherit (an open device context): a zygote that imported the caller
    then starts each test in a fresh interpreter instead."""
    _unsafe.append(str(reason))
