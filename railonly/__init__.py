"""railonly: design, build and test Rail-only GPU cluster networks.

Packages: :mod:`railonly.fabric` (pure compiler), :mod:`railonly.emulation`
(everything with side effects), :mod:`railonly.templates` (Jinja2 templates),
and this package's :mod:`railonly.cli` with one module per subcommand in
:mod:`railonly.cli.commands`.
"""

from railonly.fabric import __version__

__all__ = ["__version__"]
