"""Stand-in for tinygrad.renderer.nir: kiln's renderers are never NIR renderers."""


class NIRRenderer:
    pass
