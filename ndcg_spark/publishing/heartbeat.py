"""A heartbeat on a timer: a background thread that calls ``beat`` every ``every`` seconds while
the run's stages run in the main thread, independent of step boundaries.

The thread only calls what it is given (:meth:`ndcg_spark.publishing.lease.Lease.beat`, which holds the
lease's lock around its read and write): a beat that fails is logged and tried again at the next
one (a storage hiccup is not a lost run); a beat that finds the run taken over
(:class:`~ndcg_spark.errors.LeaseLost`) hands the error and the thread to ``on_lost(lost, stop)``,
which may go on until ``stop`` (an event) is set by :meth:`Heartbeat.stop`.
``nudge`` asks for a beat now (the lease has news to write: a step reached).

>>> import threading
>>> beats = []
>>> done = threading.Event()
>>> def beat():
...     beats.append(1)
...     if len(beats) == 3:
...         done.set()
>>> heart = Heartbeat(beat, every=0.01, on_lost=lambda lost, stop: print(lost), name="example")
>>> heart.start()
>>> done.wait(5)
True
>>> heart.stop()
>>> len(beats) >= 3 and not heart.alive
True
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ndcg_spark.errors import LeaseLost, one_paragraph

__all__ = ["Heartbeat"]

logger = logging.getLogger(__name__)


class Heartbeat:
    """Call ``beat`` every ``every`` seconds (and when nudged) in a daemon thread until stopped."""

    def __init__(self, beat: Callable[[], None], *, every: float,
                 on_lost: Callable[[LeaseLost, threading.Event], None], name: str) -> None:
        self._beat, self._every, self._on_lost = beat, every, on_lost
        self._stopping, self._nudged = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ndcg-spark heartbeat {name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def nudge(self) -> None:
        """Beat now rather than at the next tick."""
        self._nudged.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop beating; wait up to ``timeout`` seconds for a beat in flight to end."""
        self._stopping.set()
        self._nudged.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while True:
            self._nudged.wait(self._every)
            self._nudged.clear()
            if self._stopping.is_set():
                return
            try:
                self._beat()
            except LeaseLost as lost:
                self._on_lost(lost, self._stopping)
                return
            except Exception as exc:  # noqa: BLE001 - a failed beat is tried again; the stale threshold spans several
                if not self._stopping.is_set():
                    logger.warning("heartbeat failed (tried again in %g s): %s", self._every,
                                   one_paragraph(exc).splitlines()[0])
