"""Layer 6, the application shell: the command line, Hydra composition, sweeps, subcommands."""
