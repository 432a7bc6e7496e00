from assay.run.sync import run_sync


class Loud:
    """A result whose repr counts itself (a suite of thousands of cases is slow to print)."""
    shown = 0
    def __repr__(self) -> str:
        Loud.shown += 1
        return "Loud()"


async def made() -> Loud:
    return Loud()


def test_run_sync_never_prints_its_result() -> None:
    """asyncio.run restores its Ctrl-C handler through signal.signal, which on Python 3.11
    builds the repr of the handler it replaces, and with it of the finished task's result:
    run_sync hands the result over another way, so nothing is printed for nothing."""
    found = run_sync(made())
    assert isinstance(found, Loud) and Loud.shown == 0
