"""The command lines run inside the test's own process: the same `main(argv)`, exit codes,
stdout and stderr as `python -m treadwise` / `python -m experiments`, without a new interpreter
importing LangChain, Gradio, SymPy and matplotlib again (seconds for every call).

What a real process adds (a second process reading the first one's thread, the entry point
module itself) is kept in a few tests that still start one: tests/test_cli.py's
test_a_second_process_sees_the_first_turn_of_its_thread and the slow sweep through
`python -m experiments run`.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ with `env` laid over it, restored afterwards (removed keys too)."""
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_main(main: Callable[[Sequence[str]], int], args: Sequence[str], *,
             cwd: Path | None = None, env: Mapping[str, str] | None = None,
             ) -> subprocess.CompletedProcess:
    """Call `main(args)` as the command line would and return what a subprocess would have:
    argparse's `SystemExit` becomes the return code, stdout and stderr are captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_environment(env))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if isinstance(exit_.code, str):
                print(exit_.code, file=err)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def treadwise(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m treadwise ARGS`, in this process."""
    from treadwise.command_line import main

    return run_main(main, args, env=env)


def experiments(*args: str, cwd: Path | None = None,
                env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m experiments ARGS`, in this process."""
    from experiments.cli import main

    return run_main(main, args, cwd=cwd, env=env)
