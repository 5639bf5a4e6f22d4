"""store layer of vizdebug (see DESIGN.md)."""
