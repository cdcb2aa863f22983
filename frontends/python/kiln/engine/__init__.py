"""kiln.engine: the execution helpers tinygrad keeps in tinygrad.engine (TinyJit)."""
