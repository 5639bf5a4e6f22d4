"""views layer of vizdebug (see DESIGN.md)."""
