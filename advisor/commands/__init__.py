"""One module per subcommand: `register(subparsers, common)` builds its parser, `run(args)` does it.
Heavy imports belong inside `run`, so that `--help` and the parser stay cheap."""
