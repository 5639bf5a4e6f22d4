"""Where tests put what a person may want to look at afterwards (screenshots, timings).

Outside the checkout by default, so a test run leaves the working tree as it found it;
``VIZDEBUG_TEST_ARTIFACTS=<folder>`` keeps them there instead (CI can upload that folder).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ENV = "VIZDEBUG_TEST_ARTIFACTS"


def artifacts_dir(*parts: str) -> Path:
    """The folder for test artefacts (``$VIZDEBUG_TEST_ARTIFACTS``, else one under the
    system's temp folder), joined with ``parts``; created by whoever writes into it.

    >>> artifacts_dir("screenshots").name
    'screenshots'
    """
    root = os.environ.get(ENV, "").strip()
    base = Path(root) if root else Path(tempfile.gettempdir()) / f"vizdebug-test-artifacts-{os.getuid()}"
    return base.joinpath(*parts)
