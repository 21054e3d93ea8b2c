"""The public test double: `ScriptedModel` answers each model call from a script, so code built
on TreadWise can be tested with no provider and no key (the project's own launchers and loopback
servers live in tests/support/)."""

from treadwise.testing.fakes import ScriptedModel

__all__ = ["ScriptedModel"]
