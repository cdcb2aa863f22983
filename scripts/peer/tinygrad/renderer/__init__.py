"""Stand-in for tinygrad.renderer (test_ops only checks isinstance(renderer, NIRRenderer))."""
