"""The Session: attaches the collectors, folds their records, feeds the store, follows the
kernel's cells."""
