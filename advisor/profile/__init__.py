"""Measuring a tree for `xfs-advisor profile`: a walker in bounded memory (streaming histograms, a
bounded heap, a reservoir sample) and the report built from it. Never imports Textual."""
