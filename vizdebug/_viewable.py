"""``dashboard()`` and ``to_html()`` for a training source: the one sanctioned upward step.

A live ``Session`` (``collect/``) and a stored ``Run`` (``store/``) both offer their
dashboard as a convenience, as pandas offers ``.plot``. Both get it from this mixin, which
imports ``views`` only inside its methods: importing ``collect`` or ``store`` never loads
``views``, and no module below ``views`` imports it at import time.
"""

from __future__ import annotations

from typing import Any


class Viewable:
    """Adds :meth:`dashboard` and :meth:`to_html` to a
    :class:`~vizdebug.records.TrainingSource`."""

    closed: bool

    def _live_by_default(self) -> bool:
        """Whether :meth:`dashboard` follows the source unless told (``live=``)."""
        return not self.closed

    def dashboard(self, **options: Any) -> Any:
        """The training dashboard (see :class:`vizdebug.views.dashboard.Dashboard`); it
        follows a source that is still collecting or being written. Called in a notebook
        cell, it shows there at once, before the training loop that follows it.

        Examples
        --------
        >>> session.dashboard()   # doctest: +SKIP
        """
        from .views._display import shown_where_called
        from .views.dashboard import Dashboard

        options.setdefault("live", self._live_by_default())
        return shown_where_called(Dashboard.from_session(self, **options))

    def embeddings(self, layer: str | None = None, **options: Any) -> Any:
        """The tracked embeddings of ``layer`` (the first tracked by default) over training:
        aligned layouts with an epoch slider, which follows the new frames of a running
        session (see
        :func:`vizdebug.views.embedding_timeline.show_embedding_frames`; ``options`` go to
        it, e.g. ``method=``).

        Examples
        --------
        >>> session.embeddings()            # doctest: +SKIP
        >>> vd.open_run(path).embeddings()  # doctest: +SKIP
        """
        from .views._display import shown_where_called
        from .views.embedding_timeline import show_embedding_frames

        frames = self.embedding_frames(layer)  # type: ignore[attr-defined]
        probe = self.embedding_probe(frames[0].layer)  # type: ignore[attr-defined]
        view = show_embedding_frames(frames, labels=probe.labels, images=probe.images, **options)
        follow = getattr(self, "_follow_embeddings", None)
        if follow is not None:  # a running session: the slider grows with each new frame
            follow(frames[0].layer, view)
        return shown_where_called(view)

    def to_frame(self, panel: str = "curves") -> Any:
        """One dashboard panel's numbers as a ``pandas.DataFrame`` (``curves``: every
        logged series, long form; see :meth:`vizdebug.views.dashboard.Dashboard.to_frame`).

        Examples
        --------
        >>> vd.open_run(path).to_frame().to_csv("series.csv")  # doctest: +SKIP
        """
        from .views.panel_frames import source_frame

        return source_frame(self, panel)

    def figure(self, panel: str | None = "curves") -> Any:
        """One dashboard panel as a ``plotly.graph_objects.Figure`` (``curves``: a line
        per logged series; ``None``: every panel with data); needs plotly.

        Examples
        --------
        >>> vd.open_run(path).figure().write_html("series.html")  # doctest: +SKIP
        """
        from .views.panel_frames import source_figure

        return source_figure(self, panel)

    def to_html(self) -> str:
        """The dashboard as it is now, as static HTML (used by ``vd.report``)."""
        from .views.dashboard import Dashboard

        return Dashboard.from_session(self, live=False).to_html()
