"""Ctrl-C for a command's process: the first stops the run within seconds, a second ends it at once."""

from __future__ import annotations

from typing import Any

from videoferry.flows.job import Exit

#: After the first Ctrl-C a run has this long to stop its workers and record the run interrupted; then (or at
#: a second Ctrl-C) the process ends at once, as a kill would end it: the next run settles what was in flight.
STOP_GRACE_SECONDS = 10.0
#: The wakeup socket of catch_interrupts (referenced here so it is never closed while the fd is set).
_WAKEUP: list[Any] = []


def catch_interrupts(grace: float = STOP_GRACE_SECONDS) -> None:
    """Ctrl-C for a command's process (call once, from the main thread): the first raises KeyboardInterrupt
    where the command is (the run stops its workers and ends with exit status 130, its own line said) and
    hushes the log lines of the stopping; the process ends at once, with exit status 130, at a second Ctrl-C
    or when stopping takes longer than `grace` seconds.

    The kernel may hand a signal to any thread, and Python runs its handler only in the main thread once that
    thread runs Python again (not while it waits for a worker), so a watcher thread reads every signal's
    number from the wakeup fd (signal.set_wakeup_fd) and counts the presses itself.
    """
    import os
    import signal
    import socket
    import sys
    import threading

    presses = {"count": 0}
    lock = threading.Lock()

    def stop_now(why: str) -> None:
        try:
            sys.stderr.write(f"\ninterrupted ({why}): stopped at once; a rerun settles what was in flight\n")
            sys.stderr.flush()
        finally:
            os._exit(int(Exit.INTERRUPTED))

    def pressed() -> None:
        with lock:
            presses["count"] += 1
            count = presses["count"]
        if count == 1:
            _hush_logs()
            watchdog = threading.Timer(grace, stop_now, args=(f"still stopping after {grace:g} s",))
            watchdog.daemon = True
            watchdog.start()
        else:
            stop_now("a second Ctrl-C")

    def on_sigint(signum: int, frame: Any) -> None:
        if not raised.is_set():  # the first press only: a later one is the watcher's, at once
            raised.set()
            raise KeyboardInterrupt

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    _WAKEUP.append(writer)  # kept open for the process's life: the signal's C handler writes to its fd

    def watch() -> None:
        while True:
            data = reader.recv(64)
            if not data:
                return
            for number in data:
                if number == signal.SIGINT:
                    pressed()

    raised = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may handle signals: Python's default Ctrl-C stays
    signal.signal(signal.SIGINT, on_sigint)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    threading.Thread(target=watch, name="interrupts", daemon=True).start()


def _hush_logs() -> None:
    """While a run stops after Ctrl-C, no log line reaches the terminal (the command says one line): our own
    loggers and Prefect's console handlers are raised above CRITICAL (Prefect's API still gets its logs)."""
    import logging

    for name in ("connectors", "core", "flows", "state", "tasks"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                handler.setLevel(logging.CRITICAL + 1)
