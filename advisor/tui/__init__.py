"""The interactive advisor. The only package that imports Textual."""
