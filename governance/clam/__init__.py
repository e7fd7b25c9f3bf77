"""CLAM learning loop (seed 002): pure rules: nodes, lifecycle, triples, renderer, local perceiver and critic."""
