"""The command line's subcommands, one small module each; ``vizdebug.__main__`` only
builds the parser and dispatches."""
