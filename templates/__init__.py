"""openlab's data files, as a package so the wheel carries them: jinja2 templates for bot comments
(``comments/``), the static site (``site/``) and the files ``openlab init`` writes into a lab (``init/``).

Code finds them with :func:`path` (``importlib.resources``), so the same lookup works in a checkout, an editable
install and an installed wheel, whatever the working directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def path(*parts: str) -> Path:
    """The folder or file ``templates/<parts...>`` of the installed openlab, as a real filesystem path."""
    root = files(__name__)
    found = Path(str(root.joinpath(*parts)))
    if not found.exists():
        raise FileNotFoundError(f"openlab templates: {'/'.join(('templates', *parts))} is missing from the install")
    return found


__all__ = ["path"]
