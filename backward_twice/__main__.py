"""`python -m backward_twice train.py [args...]`: run your script; if it fails with a backward error,
print the usual traceback, then the diagnosis.

The script runs as `__main__` with its own `sys.argv` (`train.py args...`) and its folder first on
`sys.path`, as `python train.py` would run it. The exit status is the script's own: 0, its
`sys.exit(n)`, or 1 after an uncaught exception. `python -m backward_twice -m package.module [args]`
runs a module instead. Under torchrun: `torchrun --nproc-per-node=2 -m backward_twice train.py`.
"""
from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback

USAGE = """usage: python -m backward_twice [--no-record] SCRIPT.py [ARGS...]
       python -m backward_twice [--no-record] -m MODULE [ARGS...]

Runs your script under the recorder; when it fails with "Trying to backward through the graph a
second time" or "modified by an inplace operation", prints the traceback and then what happened
and how to fix it, from what was recorded (which line made each node, which call freed which
buffers, which line wrote in place). --no-record runs it plainly and explains it after the fact."""

# the errors a diagnosis is about: any other exception gets only its traceback, as with plain python
ABOUT = ("Trying to backward through the graph a second time", "modified by an inplace operation")


def _print_traceback(err: BaseException) -> None:
    """The traceback plain `python train.py` prints: this module's, runpy's and the recorder's frames
    left out."""
    ours = {__file__, runpy.__file__, "<frozen runpy>"}     # never a user's file that has "runpy" in its name
    recorder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "record.py")
    tb = err.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    shown = traceback.TracebackException(type(err), err, tb)
    shown.stack = traceback.StackSummary.from_list([f for f in shown.stack if f.filename != recorder])
    print("".join(shown.format()), end="", file=sys.stderr)


def main(argv: list[str]) -> int:
    record = True
    if argv and argv[0] == "--no-record":
        record, argv = False, argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    as_module = argv[0] == "-m"
    if as_module:
        if len(argv) < 2:
            print("backward_twice: -m needs a module name\n\n" + USAGE, file=sys.stderr)
            return 2
        target, args = argv[1], argv[2:]
    else:
        target, args = argv[0], argv[1:]
        if not os.path.isfile(target):
            print(f"backward_twice: no such script: {target}\n\n" + USAGE, file=sys.stderr)
            return 2
    sys.argv = [target, *args]
    if not as_module:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))  # noqa: TID251 - as `python train.py` does
    if record:
        from .recorder import record as recording

        recorder = recording()
    else:
        recorder = contextlib.nullcontext()
    try:
        with recorder:
            if as_module:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:
        _print_traceback(err)
        return 130
    except BaseException as err:
        with _sigterm_deferred():      # under torchrun, a rank that failed first has the others stopped
            _print_traceback(err)
            if any(text in str(err) for text in ABOUT):
                from .diagnose import explain

                sys.stderr.flush()
                print("\n" + "=" * 30 + " backward_twice: what happened " + "=" * 30, file=sys.stderr)
                print(explain(err).message, file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _sigterm_deferred():
    """SIGTERM held back until the block ends: torchrun stops every other rank (SIGTERM, then SIGKILL
    after a grace period) as soon as one rank fails, and each rank that failed too should still print its
    own diagnosis. A SIGTERM that came in meanwhile ends the process once the block has finished."""
    import signal

    came: list = []
    try:
        old = signal.signal(signal.SIGTERM, lambda signum, frame: came.append(signum))
    except ValueError:          # not the main thread: nothing to hold back
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        if came:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
