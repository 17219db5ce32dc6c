"""The models: one module per method."""
