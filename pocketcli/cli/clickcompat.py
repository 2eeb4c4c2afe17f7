"""Click's exception types as the installed typer uses them.

typer 0.29 vendors click as ``typer._click``; older releases use the click
package. Errors must be raised and caught as the same classes typer uses.
"""

import typer

try:
    from typer._click import exceptions as click_exceptions
except ImportError:  # typer < 0.29
    from click import exceptions as click_exceptions

UsageError = click_exceptions.UsageError
# click >= 8.2: bare `pockettts` raises this to show the help (a usage error, exit 2).
NoArgsIsHelpError = getattr(click_exceptions, "NoArgsIsHelpError", ())
BadParameter = click_exceptions.BadParameter
NoSuchOption = click_exceptions.NoSuchOption
ClickException = click_exceptions.ClickException
Abort = typer.Abort
Exit = typer.Exit

__all__ = [
    "Abort",
    "BadParameter",
    "ClickException",
    "Exit",
    "NoArgsIsHelpError",
    "NoSuchOption",
    "UsageError",
]
