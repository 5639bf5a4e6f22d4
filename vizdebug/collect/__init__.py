"""collect layer of vizdebug (see DESIGN.md)."""
