"""Store implementations (see the package root for the public names)."""
