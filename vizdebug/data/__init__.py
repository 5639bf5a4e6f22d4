"""data layer of vizdebug (see DESIGN.md)."""
