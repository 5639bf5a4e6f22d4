"""analysis layer of vizdebug (see DESIGN.md)."""
