"""Python processes forked from this test process instead of started afresh: ``Popen`` and
``run`` take the same arguments as ``subprocess``'s for a command line ``[sys.executable, "-m",
module, ...]``, ``[sys.executable, "-c", code, ...]`` or ``[sys.executable, script, ...]``.

The child is a real process (its own pid, signals, exit status, pipes and environment), but it
starts with every module this process has imported: a fresh interpreter spends 1–2 s of CPU
importing the SDK and the engine before it does anything. The child is set up the way a new
interpreter would be: the descriptors it was given and no others (the rest point at /dev/null,
as close-on-exec would have closed them), default signal handling, fresh standard streams, no
running event loop, no test-run logging or warning capture, the environment and folder asked
for, bytecode read and written where that environment says; it runs the module, code or script
as ``__main__`` and leaves without running this process's exit handlers.

Tests that are about a fresh interpreter (what it imports, its memory, what /proc shows of it)
keep using ``subprocess``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import io
import logging
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import types
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

import pytest

__all__ = ["Popen", "run", "runpytest"]

# What a new interpreter's warning filters are (no -W options, no PYTHONWARNINGS).
_DEFAULT_WARNINGS: tuple[tuple[str, type[Warning], str | None], ...] = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
)


class Popen(subprocess.Popen):  # type: ignore[type-arg]
    """``subprocess.Popen`` for a Python command line, whose child is this process forked."""

    def __init__(self, args: Sequence[str], **options: Any) -> None:
        if len(args) < 2 or args[0] != sys.executable:
            raise ValueError(f"not a command line of this interpreter: {args!r}")
        if options.get("shell") or options.get("executable") or options.get("preexec_fn"):
            raise ValueError("a forked child takes no shell, executable or preexec_fn")
        super().__init__(list(args), **options)

    def _execute_child(  # type: ignore[override]
        self,
        args: list[str],
        executable: Any,
        preexec_fn: Any,
        close_fds: bool,
        pass_fds: Sequence[int],
        cwd: Any,
        env: Any,
        startupinfo: Any,
        creationflags: int,
        shell: bool,
        p2cread: int,
        p2cwrite: int,
        c2pread: int,
        c2pwrite: int,
        errread: int,
        errwrite: int,
        restore_signals: bool,
        gid: Any,
        gids: Any,
        uid: Any,
        umask: int,
        start_new_session: bool,
        process_group: int | None = None,
        *more: Any,
    ) -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing buffered here may be written a second time by the child
        pid = os.fork()
        if pid == 0:
            _child(
                args[1:],
                streams=(p2cread, c2pwrite, errwrite),
                keep=pass_fds,
                cwd=cwd,
                env=env,
                new_session=start_new_session,
                umask=umask,
            )
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def run(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,  # subprocess.run's names
    timeout: float | None = None,
    check: bool = False,
    capture_output: bool = False,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` with a forked child."""
    if capture_output:
        options["stdout"] = options["stderr"] = subprocess.PIPE
    if input is not None:
        options["stdin"] = subprocess.PIPE
    with Popen(args, **options) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if check:
        result.check_returncode()
    return result


def runpytest(pytester: pytest.Pytester, *args: str, timeout: float | None = None) -> pytest.RunResult:
    """``pytester.runpytest_subprocess``, its pytest process forked from this one (so a run pays
    for its tests, not for importing them, and a test may run it from inside its own event loop).
    Workers that ``-n`` starts are new interpreters, as in any project."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pytester, "popen", functools.partial(_pytester_popen, pytester))
        return pytester.runpytest_subprocess(*args, timeout=timeout)


def _pytester_popen(pytester: pytest.Pytester, cmdargs: Sequence[str], stdin: Any = None, **options: Any) -> Popen:
    """``Pytester.popen``: this folder on PYTHONPATH, stdin closed unless given."""
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH", "")]))
    close_stdin = stdin is pytester.CLOSE_STDIN
    process = Popen(cmdargs, stdin=subprocess.PIPE if close_stdin else stdin, env=env, **options)
    if close_stdin:
        assert process.stdin is not None
        process.stdin.close()
    return process


# ---------------------------------------------------------------------------------------------
# The child's side


def _child(
    command: list[str],
    *,
    streams: tuple[int, int, int],
    keep: Sequence[int],
    cwd: Any,
    env: Any,
    new_session: bool,
    umask: int,
) -> NoReturn:
    code = 1
    try:
        gc.freeze()  # the parent's objects: never collected here, so their pages stay shared
        _descriptors(streams, keep)
        if new_session:
            os.setsid()
        if umask >= 0:
            os.umask(umask)
        if cwd is not None:
            os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update({os.fsdecode(k): os.fsdecode(v) for k, v in env.items()})
        _fresh_interpreter_state()
        code = _run_main(command)
    except SystemExit as leaving:
        code = _exit_code(leaving.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as Python does: die of the signal
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # what interpreter exit does first
    except BaseException:
        traceback.print_exc()
    _flush()
    os._exit(code)


def _descriptors(streams: tuple[int, int, int], keep: Sequence[int]) -> None:
    """0, 1 and 2 from ``streams`` (-1: inherited, as ``subprocess`` leaves them); every other
    descriptor except ``keep`` points at /dev/null: the numbers stay taken, so that no object of
    the parent's closes a file this child opens later, but no pipe, socket or lock is held."""
    for number, fd in enumerate(streams):
        if fd != -1 and fd != number:
            os.dup2(fd, number)
    devnull = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"):
        fd = int(name)
        if fd > 2 and fd != devnull and fd not in keep:
            try:
                os.dup2(devnull, fd)
            except OSError:  # the listing's own descriptor, closed by now
                pass
    for fd in keep:
        os.set_inheritable(fd, True)


def _fresh_interpreter_state() -> None:
    """What this process changed from a new interpreter's state, and a fork carries over."""
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        handler = signal.getsignal(number)
        if callable(handler) and handler is not signal.default_int_handler:
            signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.set_wakeup_fd(-1)
    asyncio.events._set_running_loop(None)
    asyncio.set_event_loop_policy(None)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), write_through=unbuffered
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)), errors="backslashreplace", line_buffering=True
    )
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    warnings.resetwarnings()
    for action, category, module in reversed(_DEFAULT_WARNINGS):
        warnings.filterwarnings(action, category=category, module=module or "")  # type: ignore[arg-type]
    warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
    # pytest's import hook (it rewrites asserts in test and plugin modules); a pytest run installs its own.
    sys.meta_path[:] = [finder for finder in sys.meta_path if type(finder).__name__ != "AssertionRewritingHook"]
    # Caches of the environment a new process would read afresh.
    tempfile.tempdir = None
    # Where a new interpreter reads and writes bytecode, from its environment: a child given the
    # run's cache (tests/bytecode_cache.py) compiles what it imports first into it, once for the
    # run, not from source in every child.
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    sys.pycache_prefix = os.environ.get("PYTHONPYCACHEPREFIX") or None
    fingerprints = sys.modules.get("replay.cassette.fingerprints")
    if fingerprints is not None:
        fingerprints._TEMP_FOLDERS = None  # type: ignore[attr-defined]
        fingerprints._LEGACY_TEMP = None  # type: ignore[attr-defined]


def _run_main(command: list[str]) -> int:
    """``python -m module ...``, ``python -c code ...`` or ``python script ...``."""
    option = command[0][:2]
    if option in ("-m", "-c") and len(command[0]) > 2:  # -mpytest: the option's value joined to it
        command = [option, command[0][2:], *command[1:]]
    if option == "-m":
        sys.argv = [command[1], *command[2:]]  # runpy puts the module's file in argv[0]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    elif option == "-c":
        sys.argv = ["-c", *command[2:]]
        sys.path.insert(0, "")
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        exec(compile(command[1], "<string>", "exec"), main.__dict__)
    else:
        sys.argv = list(command)
        sys.path.insert(0, os.path.dirname(os.path.abspath(command[0])))
        runpy.run_path(command[0], run_name="__main__")
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
